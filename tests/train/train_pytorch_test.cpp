// `plexus train` against PyTorch: the same 5 steps of tests/train/tools/ref_train.py
// (torch.optim.AdamW + clip_grad_norm_, float64) on a small f32 checkpoint, every step's loss
// within 1e-4 and grad norm within 1e-3 (relative); --precision bf16 against torch.autocast. Skipped, with the reason, when
// /usr/bin/python3 cannot import torch (Debian's python3-torch, installed by scripts/setup.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

#include "core/json.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_command;
using testing::run_plexus;
using testing::shell_quote;

const std::string kPython = "/usr/bin/python3";
const std::string kRefTrain = std::string(PLEXUS_SOURCE_DIR) + "/tests/train/tools/ref_train.py";

bool torch_available(std::string* why) {
  const testing::ProcessResult r = run_command(kPython + " -c 'import torch'");
  if (r.exit_code == 0) return true;
  *why = kPython + " cannot import torch (install Debian's python3-torch: scripts/setup.sh): " + r.err;
  return false;
}

// A tiny f32 model and 6 sequences of 17 tokens (batch 4 wraps around the file at step 2).
struct Fixture {
  testing::TempDir dir{"train_pytorch"};
  std::string model = dir / "model", data = dir / "data.jsonl";
  Fixture() {
    const testing::ProcessResult made = run_plexus("make-model " + shell_quote(model) +
                                                   " --preset tiny --dtype f32 --vocab 300");
    EXPECT_EQ(made.exit_code, 0) << made.err;
    std::ofstream f(data);
    for (int i = 0; i < 6; ++i) {
      Json line;
      line["ids"] = testing::some_ids(17, 300, 40 + i);
      f << line.dump() << "\n";
    }
  }
};

// Both runs' JSON ({"steps": [...], ...}: plexus's, then ref_train.py's) with the same data and
// optimizer flags; `ours` and `theirs` are the flags of one side alone. Empty on a failure.
std::pair<Json, Json> run_both(const Fixture& fx, const std::string& flags, int steps, const std::string& out_name,
                               const std::string& ours_only = "", const std::string& theirs_only = "") {
  const std::string common = " --data " + shell_quote(fx.data) + " --steps " + std::to_string(steps) +
                             " --batch-size 4 " + flags;
  const testing::ProcessResult ours = run_plexus("train " + shell_quote(fx.model) + common + " " + ours_only +
                                                 " --out " + shell_quote(fx.dir / out_name) + " --json");
  EXPECT_EQ(ours.exit_code, 0) << ours.err;
  const testing::ProcessResult ref = run_command(kPython + " " + shell_quote(kRefTrain) + " " +
                                                 shell_quote(fx.model) + common + " " + theirs_only);
  EXPECT_EQ(ref.exit_code, 0) << ref.err;
  if (ours.exit_code != 0 || ref.exit_code != 0) return {};
  std::pair<Json, Json> r{parse_json(ours.out, "plexus train --json"), parse_json(ref.out, "ref_train.py")};
  EXPECT_EQ(r.first["steps"].size(), static_cast<std::size_t>(steps));
  EXPECT_EQ(r.second["steps"].size(), static_cast<std::size_t>(steps));
  return r;
}

double relative(const Json& a, const Json& b, const char* key) {
  return std::fabs(a[key].get<double>() - b[key].get<double>()) / std::fabs(b[key].get<double>());
}

// Runs both with the same optimizer flags and compares every step; returns plexus's steps.
Json compare(const Fixture& fx, const std::string& flags, const std::string& out_name) {
  const auto [ours, ref] = run_both(fx, flags, 5, out_name);
  if (ours.is_null()) return Json::array();
  const Json& a = ours["steps"];
  const Json& b = ref["steps"];
  double worst_loss = 0, worst_norm = 0;
  for (std::size_t s = 0; s < std::min(a.size(), b.size()); ++s) {
    const double loss = relative(a[s], b[s], "loss"), norm = relative(a[s], b[s], "grad_norm");
    EXPECT_LE(loss, 1e-4) << "step " << s << " loss " << a[s]["loss"] << " vs " << b[s]["loss"];
    EXPECT_LE(norm, 1e-3) << "step " << s << " grad norm " << a[s]["grad_norm"] << " vs " << b[s]["grad_norm"];
    worst_loss = std::max(worst_loss, loss);
    worst_norm = std::max(worst_norm, norm);
  }
  std::printf("%s: largest relative difference to torch over %zu steps: loss %.2e, grad norm %.2e\n", flags.c_str(),
              a.size(), worst_loss, worst_norm);
  return a;
}

TEST(TrainPytorch, AdamWAndClippingMatchTorch) {
  std::string why;
  if (!torch_available(&why)) GTEST_SKIP() << why;
  Fixture fx;
  const Json steps = compare(fx, "--lr 1e-3", "plain");
  // The loss moves: the updates were applied.
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_NE(steps[0]["loss"].get<double>(), steps[4]["loss"].get<double>());
}

TEST(TrainPytorch, WeightDecayAndAClippingNorm) {
  std::string why;
  if (!torch_available(&why)) GTEST_SKIP() << why;
  Fixture fx;
  const Json steps = compare(fx, "--lr 3e-3 --weight-decay 0.1 --max-grad-norm 0.05 --beta2 0.99", "clipped");
  // Every step's norm is above max_norm, so every update was clipped.
  for (const Json& s : steps) EXPECT_GT(s["grad_norm"].get<double>(), 0.05);
}

// --precision bf16 against torch.autocast("cpu", dtype=torch.bfloat16) (ref_train.py --autocast
// bf16) over 20 steps: the loss of step s within min(2e-2, 1e-3·s) relative (docs/train.md: the
// issue's 2e-2, reached linearly; seen up to 5.9e-3 by step 16 here, 1e-3 on other data), and
// step 1's gradient norm, of the same weights, within 1e-3. Later norms are not compared: bf16's
// rounding makes them wander by several percent between any two runs, torch's bf16 and f32 too.
TEST(TrainPytorch, Bf16MatchesTorchAutocast) {
  std::string why;
  if (!torch_available(&why)) GTEST_SKIP() << why;
  Fixture fx;
  const auto [ours, ref] = run_both(fx, "--lr 1e-3", 20, "bf16", "--precision bf16", "--autocast bf16");
  ASSERT_FALSE(ours.is_null());
  EXPECT_EQ(ours["precision"], "bf16");
  const Json& a = ours["steps"];
  const Json& b = ref["steps"];
  double worst = 0;
  for (std::size_t s = 0; s < std::min(a.size(), b.size()); ++s) {
    const double loss = relative(a[s], b[s], "loss");
    EXPECT_LE(loss, std::min(2e-2, 1e-3 * static_cast<double>(s + 1)))
        << "step " << s + 1 << " loss " << a[s]["loss"] << " vs autocast's " << b[s]["loss"];
    worst = std::max(worst, loss);
  }
  ASSERT_FALSE(a.empty());
  EXPECT_LE(relative(a[0], b[0], "grad_norm"), 1e-3)
      << "step 1 grad norm " << a[0]["grad_norm"] << " vs autocast's " << b[0]["grad_norm"];
  std::printf("bf16: largest relative loss difference to torch.autocast over %zu steps: %.2e\n", a.size(), worst);
}

}  // namespace
}  // namespace plexus

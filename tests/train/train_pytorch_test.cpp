// `plexus train` against PyTorch: the same 5 steps of tests/train/tools/ref_train.py
// (torch.optim.AdamW + clip_grad_norm_, float64) on a small f32 checkpoint, every step's loss
// within 1e-4 and grad norm within 1e-3 (relative). Skipped, with the reason, when
// /usr/bin/python3 cannot import torch (Debian's python3-torch, installed by scripts/setup.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

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

// Runs both with the same optimizer flags and compares every step; returns plexus's steps.
Json compare(const Fixture& fx, const std::string& flags, const std::string& out_name) {
  const std::string common = " --data " + shell_quote(fx.data) + " --steps 5 --batch-size 4 " + flags;
  const testing::ProcessResult ours =
      run_plexus("train " + shell_quote(fx.model) + common + " --out " + shell_quote(fx.dir / out_name) + " --json");
  EXPECT_EQ(ours.exit_code, 0) << ours.err;
  const testing::ProcessResult ref = run_command(kPython + " " + shell_quote(kRefTrain) + " " +
                                                 shell_quote(fx.model) + common);
  EXPECT_EQ(ref.exit_code, 0) << ref.err;
  if (ours.exit_code != 0 || ref.exit_code != 0) return Json::array();
  const Json a = parse_json(ours.out, "plexus train --json")["steps"];
  const Json b = parse_json(ref.out, "ref_train.py")["steps"];
  EXPECT_EQ(a.size(), 5u);
  EXPECT_EQ(b.size(), 5u);
  double worst_loss = 0, worst_norm = 0;
  for (std::size_t s = 0; s < std::min(a.size(), b.size()); ++s) {
    const double loss = a[s]["loss"].get<double>(), ref_loss = b[s]["loss"].get<double>();
    const double norm = a[s]["grad_norm"].get<double>(), ref_norm = b[s]["grad_norm"].get<double>();
    EXPECT_LE(std::fabs(loss - ref_loss), 1e-4 * std::fabs(ref_loss)) << "step " << s << " loss " << loss << " vs " << ref_loss;
    EXPECT_LE(std::fabs(norm - ref_norm), 1e-3 * std::fabs(ref_norm)) << "step " << s << " grad norm " << norm << " vs " << ref_norm;
    worst_loss = std::max(worst_loss, std::fabs(loss - ref_loss) / std::fabs(ref_loss));
    worst_norm = std::max(worst_norm, std::fabs(norm - ref_norm) / std::fabs(ref_norm));
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

}  // namespace
}  // namespace plexus

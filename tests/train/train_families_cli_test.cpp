// `plexus train` on the families beyond Llama as processes: a tiny Gemma 2 (soft-capped), Gemma 3
// and Phi-3 train (the loss falls), the written model keeps the checkpoint's Hugging Face names
// and shapes (Phi-3's fused qkv_proj and gate_up_proj) and runs in `plexus generate`.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/json.h"
#include "model/checkpoint.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;

class TrainFamilies : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainFamilies, LossFallsAndTheModelGenerates) {
  const std::string arch = GetParam();
  testing::TempDir dir("train_families");
  const std::string model = dir / "model", out = dir / "out", data = dir / "data.jsonl";
  ASSERT_EQ(run_plexus("make-model " + shell_quote(model) + " --arch " + arch + " --vocab 300 --dtype f32").exit_code, 0);
  {
    // 16 sequences of 33 ids counting up by 3 from different starts: learnable in a few steps.
    std::ofstream f(data);
    for (int i = 0; i < 16; ++i) {
      Json ids = Json::array();
      for (int j = 0; j < 33; ++j) ids.push_back((7 * i + 3 * j) % 50);
      f << Json::object({{"ids", ids}}).dump() << "\n";
    }
  }
  const testing::ProcessResult r =
      run_plexus("train " + shell_quote(model) + " --data " + shell_quote(data) + " --out " + shell_quote(out) +
                 " --steps 10 --batch-size 4 --lr 3e-3 --threads 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = parse_json(r.out, "plexus train --json");
  const Json& steps = j.at("steps");
  ASSERT_EQ(steps.size(), 10u);
  const double first = steps[0].at("loss").get<double>(), last = steps[9].at("loss").get<double>();
  EXPECT_LT(last, 0.85 * first) << arch << ": loss " << first << " -> " << last;

  // The same tensors under the same names and shapes as the model trained from.
  const Checkpoint before(model), after(out);
  ASSERT_EQ(after.names(), before.names());
  for (const std::string& name : before.names()) {
    EXPECT_EQ(after.get(name).info->shape, before.get(name).info->shape) << name;
  }
  const char* own = arch == "phi3" ? "model.layers.0.self_attn.qkv_proj.weight"
                                   : "model.layers.0.post_feedforward_layernorm.weight";
  EXPECT_TRUE(after.contains(own)) << own;

  const testing::ProcessResult g = run_plexus("generate " + shell_quote(out) + " --ids 1,2,3 --max-tokens 4 --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(parse_json(g.out, "plexus generate --json").at("ids").size(), 4u) << g.out;
}

INSTANTIATE_TEST_SUITE_P(Arches, TrainFamilies, ::testing::Values("gemma2", "gemma3", "phi3"));

}  // namespace
}  // namespace plexus

// The training step against PyTorch autograd: loss sum and every parameter's gradient 2-norm of
// one batch of tiny f32 checkpoints (Llama, Qwen2, Qwen3, Mistral, Gemma 2, Gemma 3, Phi-3), from tests/train/tools/ref_grads.py (float64), with RefTrainOps
// and CpuTrainOps. Skips when /usr/bin/python3 cannot import torch (Debian's python3-torch,
// scripts/setup.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "core/json.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "test_util.h"
#include "core/thread_pool.h"
#include "train/cpu_train_ops.h"
#include "train/llama_train.h"
#include "train/ref_train_ops.h"
#include "train_model_util.h"

namespace plexus {
namespace {

const char* const kPython = "/usr/bin/python3";

struct TorchCase {
  const char* name;
  Arch arch;
  bool tied;
  std::int64_t window;  // Mistral's sliding window; 0: none
  std::int64_t T = 10;  // tokens per sequence (Phi-3's tiny LongRoPE turns to its long factors past 16)
  const char* patch = nullptr;  // config.json fields to change (JSON)
};

void PrintTo(const TorchCase& c, std::ostream* os) { *os << c.name; }

class AgainstTorch : public ::testing::TestWithParam<TorchCase> {};

TEST_P(AgainstTorch, LossAndGradientNormsMatchAutograd) {
  if (testing::run_command(std::string(kPython) + " -c 'import torch, numpy'").exit_code != 0) {
    GTEST_SKIP() << kPython << " cannot import torch and numpy (Debian's python3-torch: scripts/setup.sh)";
  }
  const TorchCase& tc = GetParam();
  testing::TempDir dir("llama_train_torch");
  MakeModelOptions mo;
  mo.arch = tc.arch;
  mo.dtype = DType::kF32;
  mo.vocab_size = 300;
  mo.std = 0.1;
  mo.seed = 11;
  write_random_model(dir.path(), mo);
  if (tc.tied) testing::patch_config(dir.path(), Json::object({{"tie_word_embeddings", true}}));
  if (tc.window > 0) testing::patch_config(dir.path(), Json::object({{"sliding_window", tc.window}}));
  if (tc.patch != nullptr) testing::patch_config(dir.path(), parse_json(tc.patch, "the case's patch"));
  const ModelConfig c = load_model_config(dir.path());
  const LlamaTrainModel model(c);
  const ParamLayout& layout = model.layout();
  std::vector<float> weights(static_cast<std::size_t>(layout.total()));
  load_params(Checkpoint(dir.path()), layout, weights);
  const std::int64_t b = 2, T = tc.T;
  const std::vector<std::int32_t> tokens = testing::random_tokens(b, T, c.vocab_size, 8);
  // The oracle and the fast CPU ops, each against torch.
  RefTrainOps ref;
  ThreadPool pool(2);
  CpuTrainOps cpu(pool);
  std::vector<double> losses;
  std::vector<std::vector<float>> all_grads;
  for (TrainOps* ops : {static_cast<TrainOps*>(&ref), static_cast<TrainOps*>(&cpu)}) {
    std::vector<float>& grads = all_grads.emplace_back(weights.size(), 0.0f);
    TrainActivations acts(c, b, T);
    losses.push_back(model.forward_backward(*ops, view_tensors(c, layout, weights.data()),
                                            view_tensors(c, layout, grads.data()), {tokens, b, T}, 1.0f, acts));
  }

  std::string batch;
  for (std::int64_t i = 0; i < b * T; ++i) {
    batch += (i == 0 ? "" : i % T == 0 ? ";" : ",") + std::to_string(tokens[static_cast<std::size_t>(i)]);
  }
  const testing::ProcessResult r =
      testing::run_command(std::string(kPython) + " " + testing::shell_quote(PLEXUS_SOURCE_DIR "/tests/train/tools/ref_grads.py") +
                           " " + testing::shell_quote(dir.path()) + " --batch '" + batch + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json torch = parse_json(r.out, "ref_grads.py output");
  const double torch_loss = torch.at("loss_sum").get<double>();
  const Json& norms = torch.at("grad_norms");
  EXPECT_EQ(norms.size(), layout.slots().size());
  for (std::size_t k = 0; k < losses.size(); ++k) {
    const char* ops = k == 0 ? "RefTrainOps" : "CpuTrainOps";
    EXPECT_NEAR(losses[k], torch_loss, 1e-5 * torch_loss) << ops;
    for (const ParamSlot& s : layout.slots()) {
      ASSERT_TRUE(norms.contains(s.name)) << s.name;
      double sq = 0;
      for (std::int64_t i = 0; i < s.count; ++i) sq += std::pow(all_grads[k][static_cast<std::size_t>(s.offset + i)], 2);
      const double want = norms.at(s.name).get<double>();
      EXPECT_GT(want, 0.0) << s.name;
      EXPECT_NEAR(std::sqrt(sq), want, 1e-4 * want) << ops << " " << s.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Arches, AgainstTorch,
                         ::testing::Values(TorchCase{"llama", Arch::kLlama, false, 0},
                                           TorchCase{"llama_tied", Arch::kLlama, true, 0},
                                           TorchCase{"qwen2", Arch::kQwen2, false, 0},
                                           TorchCase{"qwen3", Arch::kQwen3, false, 0},
                                           TorchCase{"mistral_window_4", Arch::kMistral, false, 4},
                                           // GeGLU, (1 + w) norms, post-norms, q/k norms, √H embedding,
                                           // query_pre_attn_scalar, window 8 on layers 0, 1, 3 with the
                                           // local rope base, linear rope scaling on layer 2, tied
                                           TorchCase{"gemma3", Arch::kGemma3, true, 0, 12},
                                           // Gemma 2 with caps that bend values of order 1
                                           TorchCase{"gemma2_soft_capped", Arch::kGemma2, true, 0, 12,
                                                     R"({"attn_logit_softcapping": 1.0, "final_logit_softcapping": 1.5})"},
                                           // fused qkv_proj / gate_up_proj, partial rotary 0.75, LongRoPE
                                           // (short factors, attention factor on cos and sin)
                                           TorchCase{"phi3", Arch::kPhi3, false, 0},
                                           TorchCase{"phi3_long_factors", Arch::kPhi3, false, 0, 20}),
                         [](const ::testing::TestParamInfo<TorchCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace plexus

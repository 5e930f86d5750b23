// The Llama-family training step (train/llama_train): whole-model gradients against central finite
// differences for every architecture's parts, the GradientsReady order, accumulation, and the
// forward loss against the inference engine.
#include "train/llama_train.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/checkpoint.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"
#include "train/ref_train_ops.h"
#include "train_model_util.h"

namespace plexus {
namespace {

using testing::random_tokens;
using testing::small_train_config;
using testing::TrainFixture;

struct GradCase {
  const char* name;
  Arch arch;
  bool tied;
  bool attention_bias;  // Llama's attention_bias: q/k/v and o_proj biases
};

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

class GradientCheck : public ::testing::TestWithParam<GradCase> {};

// Every tensor's gradient at 4 random elements against central differences of the loss sum
// (Richardson-extrapolated from steps h and h/2).
TEST_P(GradientCheck, MatchesCentralFiniteDifferences) {
  const GradCase& gc = GetParam();
  ModelConfig c = small_train_config(gc.arch, gc.tied);
  if (gc.attention_bias) c.qkv_bias = c.o_bias = true;
  TrainFixture f(c, 7);
  const std::int64_t b = 2, T = 6;
  const std::vector<std::int32_t> tokens = random_tokens(b, T, c.vocab_size, 1);
  const MicroBatch mb{tokens, b, T};
  RefTrainOps ops;
  TrainActivations acts(c, b, T);
  const double loss = f.model.forward_backward(ops, f.w, f.g, mb, 1.0f, acts);
  EXPECT_NEAR(f.model.forward_loss(ops, f.w, mb, acts), loss, 1e-9 * std::abs(loss));

  std::mt19937 rng(99);
  const float h = 2e-2f;
  int checked = 0;
  for (const ParamSlot& s : f.model.layout().slots()) {
    std::uniform_int_distribution<std::int64_t> pick(0, s.count - 1);
    double grad_sq = 0;
    for (std::int64_t i = 0; i < s.count; ++i) grad_sq += std::pow(f.grads[static_cast<std::size_t>(s.offset + i)], 2);
    EXPECT_GT(grad_sq, 0.0) << s.name << " gets no gradient";
    for (int k = 0; k < 4; ++k) {
      const std::size_t at = static_cast<std::size_t>(s.offset + pick(rng));
      const float orig = f.weights[at];
      auto central = [&](float step) {  // (L(θ+step) − L(θ−step)) / 2·step, the steps as stored
        f.weights[at] = orig + step;
        const double up = f.model.forward_loss(ops, f.w, mb, acts);
        const double plus = static_cast<double>(f.weights[at]) - orig;
        f.weights[at] = orig - step;
        const double down = f.model.forward_loss(ops, f.w, mb, acts);
        const double minus = orig - static_cast<double>(f.weights[at]);
        f.weights[at] = orig;
        return (up - down) / (plus + minus);
      };
      // Richardson: the O(h²) error of the central difference cancels, leaving O(h⁴).
      const double fd = (4.0 * central(h / 2) - central(h)) / 3.0;
      const double an = f.grads[at];
      EXPECT_NEAR(an, fd, 2e-4 + 5e-3 * std::abs(fd)) << s.name << " element " << (at - s.offset);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4 * static_cast<int>(f.model.layout().slots().size()));
}

INSTANTIATE_TEST_SUITE_P(Arches, GradientCheck,
                         ::testing::Values(GradCase{"llama_tied", Arch::kLlama, true, false},
                                           GradCase{"llama_untied_attention_bias", Arch::kLlama, false, true},
                                           GradCase{"qwen2_biases", Arch::kQwen2, true, false},
                                           GradCase{"qwen3_qk_norm", Arch::kQwen3, false, false},
                                           GradCase{"mistral_window_3_of_6", Arch::kMistral, false, false},
                                           GradCase{"gemma2_soft_capped_tied", Arch::kGemma2, true, false},
                                           GradCase{"gemma3_tied", Arch::kGemma3, true, false},
                                           GradCase{"phi3_fused_partial_rotary_long_factors", Arch::kPhi3, false, false}),
                         [](const ::testing::TestParamInfo<GradCase>& i) { return std::string(i.param.name); });

// Layers L−1 … 0 then −1, each part's gradients final when announced; gradients add up (+=)
// over calls and scale with grad_scale.
TEST(LlamaTrain, ReadyOrderFinalGradientsAccumulateAndScale) {
  const ModelConfig c = small_train_config(Arch::kQwen3, true);
  TrainFixture f(c, 3);
  const std::int64_t b = 2, T = 5;
  const std::vector<std::int32_t> tokens = random_tokens(b, T, c.vocab_size, 2);
  RefTrainOps ops;
  TrainActivations acts(c, 3, T);  // room for more sequences than used
  const ParamLayout& layout = f.model.layout();
  std::vector<int> order;
  std::vector<std::vector<float>> at_ready;  // the announced part's gradients when announced
  const auto part = [&](int layer) {
    std::vector<float> v;
    auto take = [&](std::pair<std::int64_t, std::int64_t> r) {
      v.insert(v.end(), f.grads.begin() + r.first, f.grads.begin() + r.second);
    };
    if (layer >= 0) {
      take(layout.layer_range(layer));
    } else {
      for (const auto& r : layout.non_layer_ranges()) take(r);
    }
    return v;
  };
  const double loss = f.model.forward_backward(ops, f.w, f.g, {tokens, b, T}, 0.5f, acts, [&](int layer) {
    order.push_back(layer);
    at_ready.push_back(part(layer));
  });
  EXPECT_GT(loss, 0.0);
  ASSERT_EQ(order, (std::vector<int>{1, 0, -1}));
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(at_ready[i], part(order[i])) << "part " << order[i];

  // grad_scale 0.5 twice = the gradient of the loss sum once.
  EXPECT_DOUBLE_EQ(f.model.forward_backward(ops, f.w, f.g, {tokens, b, T}, 0.5f, acts), loss);
  std::vector<float> once(f.grads.size(), 0.0f);
  ModelTensors g1 = view_tensors(c, layout, once.data());
  f.model.forward_backward(ops, f.w, g1, {tokens, b, T}, 1.0f, acts);
  double max_diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < once.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(once[i] - f.grads[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::abs(once[i])));
  }
  EXPECT_GT(max_abs, 0.0);
  EXPECT_LE(max_diff, 1e-5 * max_abs);

  // Activations sized for exactly b sequences give the same numbers as the larger ones.
  TrainActivations exact(c, b, T);
  std::vector<float> again(f.grads.size(), 0.0f);
  EXPECT_EQ(f.model.forward_backward(ops, f.w, view_tensors(c, layout, again.data()), {tokens, b, T}, 1.0f, exact),
            loss);
  EXPECT_EQ(again, once);
}

// More predictions than one chunk of logits (1024 rows): the same loss and gradients as the
// sequences one at a time (each a single chunk).
TEST(LlamaTrain, HeadChunksOverManyRows) {
  const ModelConfig c = small_train_config(Arch::kLlama, true);
  TrainFixture f(c, 5);
  const std::int64_t b = 2, T = 600;  // 1198 predictions
  const std::vector<std::int32_t> tokens = random_tokens(b, T, c.vocab_size, 4);
  RefTrainOps ops;
  TrainActivations both(c, b, T), one(c, 1, T);
  const double loss = f.model.forward_backward(ops, f.w, f.g, {tokens, b, T}, 1.0f, both);
  std::vector<float> sum(f.grads.size(), 0.0f);
  const ModelTensors gs = view_tensors(c, f.model.layout(), sum.data());
  double loss_sum = 0;
  for (std::int64_t i = 0; i < b; ++i) {
    loss_sum += f.model.forward_backward(ops, f.w, gs, {std::span(tokens).subspan(i * T, T), 1, T}, 1.0f, one);
  }
  EXPECT_NEAR(loss, loss_sum, 1e-9 * loss);
  double max_diff = 0, max_abs = 0;
  for (std::size_t i = 0; i < sum.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(sum[i] - f.grads[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::abs(sum[i])));
  }
  EXPECT_GT(max_abs, 0.0);
  EXPECT_LE(max_diff, 1e-5 * max_abs);
}

TEST(LlamaTrain, ActivationBytesAreTheAllocation) {
  for (Arch arch : {Arch::kLlama, Arch::kQwen3}) {
    const ModelConfig c = small_train_config(arch, false);
    for (std::int64_t b : {1, 3}) {
      const TrainActivations acts(c, b, 7);
      EXPECT_EQ(TrainActivations::bytes_for(c, b, 7) % 64, 0);
      // The kept activations alone: (L+1)·H + L·(H + 2Q + 2KV + 2I + n_heads) floats per token.
      const std::int64_t per_token = (c.num_layers + 1) * c.hidden_size +
                                     c.num_layers * (c.hidden_size + 2 * c.q_dim() + 2 * c.kv_dim() +
                                                     2 * c.intermediate_size + c.num_heads);
      EXPECT_GE(TrainActivations::bytes_for(c, b, 7), per_token * b * 7 * 4);
      EXPECT_GT(TrainActivations::bytes_for(c, b + 1, 7), TrainActivations::bytes_for(c, b, 7));
    }
  }
}

TEST(LlamaTrain, RefusesWhatTrainingDoesNotSupport) {
  ModelConfig c = small_train_config(Arch::kLlama, false);
  c.rope_interleaved = true;
  EXPECT_THROW(LlamaTrainModel{c}, InputError);
  c.rope_interleaved = false;
  c.rope_freq_factors.assign(2, 1.0);
  EXPECT_THROW(LlamaTrainModel{c}, InputError);
  c.rope_freq_factors.clear();
  EXPECT_NO_THROW(LlamaTrainModel{c});
  EXPECT_THROW(TrainActivations(c, 1, 1), InputError);  // one token predicts nothing

  TrainFixture f(c, 1);
  RefTrainOps ops;
  TrainActivations acts(c, 1, 4);
  std::vector<std::int32_t> tokens = {1, 2, 40, 3};  // 40 is outside the vocabulary of 40
  EXPECT_THROW(f.model.forward_loss(ops, f.w, {tokens, 1, 4}, acts), InputError);
}

// A TrainOps without the Gemma / Phi-3 ops (CudaTrainOps today): Gemma and a partial-rotary
// Phi-3 are refused (InputError naming the model) before any op runs; Llama trains.
class OpsWithoutFamilies : public RefTrainOps {
 public:
  bool family_ops() const override { return false; }
};

TEST(LlamaTrain, RefusesGemmaAndPartialRotaryOnOpsWithoutThem) {
  OpsWithoutFamilies ops;
  for (Arch arch : {Arch::kGemma2, Arch::kGemma3, Arch::kPhi3, Arch::kLlama}) {
    const ModelConfig c = small_train_config(arch, true);
    TrainFixture f(c, 2);
    TrainActivations acts(c, 1, 4);
    const std::vector<std::int32_t> tokens = {1, 2, 3, 4};
    if (arch == Arch::kLlama) {
      EXPECT_GT(f.model.forward_loss(ops, f.w, {tokens, 1, 4}, acts), 0.0);
      continue;
    }
    EXPECT_THROW(f.model.forward_loss(ops, f.w, {tokens, 1, 4}, acts), InputError) << arch_name(arch);
    EXPECT_THROW(f.model.forward_backward(ops, f.w, f.g, {tokens, 1, 4}, 1.0f, acts), InputError) << arch_name(arch);
  }
}

// The forward loss of tiny f32 checkpoints (hidden 64, 4 layers) equals the sum of the
// inference engine's per-token NLL (plexus perplexity's numbers) over each sequence.
TEST(LlamaTrain, ForwardLossMatchesTheInferenceEngine) {
  for (Arch arch : {Arch::kLlama, Arch::kQwen2, Arch::kQwen3, Arch::kMistral, Arch::kGemma2, Arch::kGemma3, Arch::kPhi3}) {
    testing::TempDir dir("llama_train_engine");
    testing::write_tiny_f32_model(dir.path(), arch);
    if (arch == Arch::kMistral) testing::patch_config(dir.path(), Json::object({{"sliding_window", 5}}));
    const ModelConfig c = load_model_config(dir.path());
    const LlamaTrainModel model(c);
    std::vector<float> weights(static_cast<std::size_t>(model.layout().total()));
    load_params(Checkpoint(dir.path()), model.layout(), weights);
    const ModelTensors w = view_tensors(c, model.layout(), weights.data());
    const std::int64_t b = 3, T = 12;
    const std::vector<std::int32_t> tokens = random_tokens(b, T, c.vocab_size, 5);
    RefTrainOps ops;
    TrainActivations acts(c, b, T);
    const double loss = model.forward_loss(ops, w, {tokens, b, T}, acts);

    EngineOptions eo;
    eo.threads = 1;
    eo.max_context = 64;
    Engine engine(dir.path(), eo);
    double engine_loss = 0;
    for (std::int64_t i = 0; i < b; ++i) {
      const PerplexityResult r = perplexity(engine, std::span(tokens).subspan(static_cast<std::size_t>(i * T), T));
      for (double nll : r.nll) engine_loss += nll;
    }
    EXPECT_NEAR(loss, engine_loss, 1e-5 * engine_loss) << arch_name(arch);
  }
}

}  // namespace
}  // namespace plexus

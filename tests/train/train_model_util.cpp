// Small training-step models for tests (train_model_util.h).
#include "train_model_util.h"

#include <random>
#include <string>

#include "model/make_model.h"

namespace plexus::testing {

ModelConfig small_train_config(Arch arch, bool tied) {
  ModelConfig c;
  c.arch = arch;
  c.architecture = std::string(arch_name(arch));
  c.hidden_size = 16;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 4;
  c.intermediate_size = 24;
  c.vocab_size = 40;
  c.rms_norm_eps = 1e-6;
  c.tie_word_embeddings = tied;
  switch (arch) {
    case Arch::kLlama: c.model_type = "llama"; break;
    case Arch::kMistral:
      c.model_type = "mistral";
      c.sliding_window = 3;
      break;
    case Arch::kQwen2:
      c.model_type = "qwen2";
      c.qkv_bias = true;
      break;
    case Arch::kQwen3:
      c.model_type = "qwen3";
      c.qk_norm = true;
      break;
    case Arch::kGemma2:  // window 3 on layer 0; scores capped at 1.0, logits at 1.5 (caps that bend values of order 1)
      c.model_type = "gemma2";
      c.gemma = true;
      c.query_pre_attn_scalar = 6;
      c.sliding_window = 3;
      c.sliding_layers = {true, false};
      c.attn_logit_softcap = 1.0, c.final_logit_softcap = 1.5;
      break;
    case Arch::kGemma3:  // window 3 on layer 0 with the local rope base, layer 1 global with linear scaling
      c.model_type = "gemma3_text";
      c.gemma = true;
      c.qk_norm = true;
      c.query_pre_attn_scalar = 6;
      c.sliding_window = 3;
      c.sliding_layers = {true, false};
      c.rope_theta = 1000000.0, c.rope_local_theta = 10000.0;
      c.rope_scaling = RopeScaling::kLinear, c.rope_factor = 2.0;
      break;
    case Arch::kPhi3:  // fused qkv / gate_up; rope on 2 of 4 dims; LongRoPE from 4 positions (long past them)
      c.model_type = "phi3";
      c.partial_rotary_factor = 0.5;
      c.max_position_embeddings = 32;
      c.rope_scaling = RopeScaling::kLongRope;
      c.rope_original_max_position = 4;
      c.rope_short_factor = {1.5};
      c.rope_long_factor = {3.0};
      c.rope_attention_factor = 1.25;
      break;
    default: break;  // the mixtures of experts: training runs dense models only
  }
  return c;
}

TrainFixture::TrainFixture(const ModelConfig& config, std::uint64_t seed) : model(config) {
  const ParamLayout& layout = model.layout();
  weights.assign(static_cast<std::size_t>(layout.total()), 0.0f);
  grads.assign(static_cast<std::size_t>(layout.total()), 0.0f);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const ParamSlot& s : layout.slots()) {
    const bool norm = s.name.ends_with("norm.weight");
    const bool bias = s.name.ends_with(".bias");
    for (std::int64_t i = 0; i < s.count; ++i) {
      const float z = normal(rng);
      weights[static_cast<std::size_t>(s.offset + i)] = norm ? 1.0f + 0.1f * z : bias ? 0.1f * z : 0.3f * z;
    }
  }
  w = view_tensors(config, layout, weights.data());
  g = view_tensors(config, layout, grads.data());
}

std::vector<std::int32_t> random_tokens(std::int64_t b, std::int64_t T, std::int64_t vocab, int salt) {
  std::mt19937 rng(static_cast<unsigned>(1234 + salt));
  std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(vocab - 1));
  std::vector<std::int32_t> ids(static_cast<std::size_t>(b * T));
  for (std::int32_t& id : ids) id = pick(rng);
  return ids;
}

void write_tiny_f32_model(const std::string& dir, Arch arch) {
  MakeModelOptions mo;
  mo.arch = arch;
  mo.dtype = DType::kF32;
  mo.vocab_size = 300;
  mo.std = 0.1;
  write_random_model(dir, mo);
}

}  // namespace plexus::testing

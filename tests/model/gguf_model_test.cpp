// GGUF models: config from metadata, tensors under Hugging Face names (zero copy) (unit tests; the
// golden-file runs are in gguf_golden_test.cpp).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/gguf_file.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/gguf_model.h"
#include "gguf_bytes.h"

namespace plexus {
namespace {

std::string gguf_path(const std::string& name) { return std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf/" + name; }

TEST(GgufModel, ConfigFromTheMetadata) {
  const ModelConfig c = load_model_config(gguf_path("gs-llama-q8_0.gguf"));
  EXPECT_EQ(c.arch, Arch::kLlama);
  EXPECT_EQ(c.hidden_size, 256);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.intermediate_size, 512);
  EXPECT_EQ(c.vocab_size, 2048);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_NEAR(c.rms_norm_eps, 1e-6, 1e-12);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_TRUE(c.rope_interleaved);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<std::int64_t>{2}));
  EXPECT_TRUE(c.rope_freq_factors.empty());
}

TEST(GgufModel, AMissingFileIsNotFound) {
  try {
    load_model_config("models/absent.gguf");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("model 'models/absent.gguf' not found: no such GGUF file", 0), 0u) << e.what();
  }
}

TEST(GgufModel, HuggingFaceNames) {
  EXPECT_EQ(hf_name_of_gguf_tensor("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("output.weight"), "lm_head.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("output_norm.weight"), "model.norm.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.0.attn_norm.weight"), "model.layers.0.input_layernorm.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.12.ffn_norm.weight"), "model.layers.12.post_attention_layernorm.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.1.attn_q.bias"), "model.layers.1.self_attn.q_proj.bias");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.1.attn_output.weight"), "model.layers.1.self_attn.o_proj.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.1.attn_k_norm.weight"), "model.layers.1.self_attn.k_norm.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.3.ffn_down.weight"), "model.layers.3.mlp.down_proj.weight");
  EXPECT_EQ(hf_name_of_gguf_tensor("rope_freqs.weight"), std::nullopt);
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.01.ffn_up.weight"), std::nullopt);
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.x.ffn_up.weight"), std::nullopt);
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.1.ffn_up"), std::nullopt);
  EXPECT_EQ(hf_name_of_gguf_tensor("blk.1.unknown.weight"), std::nullopt);
}

TEST(GgufModel, CheckpointViewsTheTensorsInPlaceUnderHfNames) {
  const std::string path = gguf_path("gs-llama-q4_k_m.gguf");
  ASSERT_TRUE(Checkpoint::exists_in(path));
  const Checkpoint ck(path);
  ASSERT_NE(ck.gguf(), nullptr);
  EXPECT_TRUE(ck.files().empty());
  EXPECT_EQ(ck.names().size(), 21u);
  const TensorRef q = ck.get("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(q.info->shape, (std::vector<std::int64_t>{256, 256}));
  EXPECT_EQ(q.info->dtype, DType::kQ4_K);
  EXPECT_EQ(q.path(), path);
  const GgufTensor* g = ck.gguf()->find_tensor("blk.0.attn_q.weight");
  EXPECT_EQ(q.data, ck.gguf()->data(*g));  // zero copy
  const TensorRef k = ck.get("model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(k.info->shape, (std::vector<std::int64_t>{128, 256}));  // (kv_dim, hidden): HF order
  EXPECT_EQ(ck.get("model.layers.1.mlp.down_proj.weight").info->shape, (std::vector<std::int64_t>{256, 512}));
  EXPECT_EQ(ck.get("model.layers.1.mlp.down_proj.weight").info->dtype, DType::kQ6_K);
  EXPECT_EQ(ck.get("lm_head.weight").info->dtype, DType::kQ6_K);
  EXPECT_EQ(ck.get("model.norm.weight").info->dtype, DType::kF32);
  EXPECT_EQ(ck.get("model.embed_tokens.weight").info->shape, (std::vector<std::int64_t>{2048, 256}));
  EXPECT_TRUE(ck.prefault());
}


// A GGUF file of the given metadata and tensors (each F32, zero-filled) in memory.
std::vector<std::uint8_t> mini(const std::string& arch, const std::vector<std::pair<std::string, std::uint32_t>>& ints,
                               const std::vector<std::pair<std::string, std::vector<std::uint64_t>>>& tensors,
                               const std::vector<float>& rope_freqs = {},
                               const std::vector<std::pair<std::string, float>>& floats = {},
                               const std::vector<std::pair<std::string, std::string>>& strings = {}) {
  GgufBytes m;
  m.put<std::uint32_t>(0x46554747);
  m.put<std::uint32_t>(3);
  m.put<std::uint64_t>(tensors.size() + (rope_freqs.empty() ? 0 : 1));
  m.put<std::uint64_t>(ints.size() + floats.size() + strings.size() + 1);
  m.str("general.architecture");
  m.put<std::uint32_t>(8);
  m.str(arch);
  for (const auto& [k, v] : ints) {
    m.str(k);
    m.put<std::uint32_t>(4);
    m.put<std::uint32_t>(v);
  }
  for (const auto& [k, v] : floats) m.kv_f32(k, v);
  for (const auto& [k, v] : strings) m.kv_str(k, v);
  std::uint64_t off = 0;
  std::vector<std::uint64_t> sizes;
  auto info = [&](const std::string& name, const std::vector<std::uint64_t>& dims) {
    m.str(name);
    m.put<std::uint32_t>(static_cast<std::uint32_t>(dims.size()));
    std::uint64_t n = 4;
    for (auto d : dims) {
      m.put<std::uint64_t>(d);
      n *= d;
    }
    m.put<std::uint32_t>(0);
    m.put<std::uint64_t>(off);
    off += (n + 31) / 32 * 32;
  };
  for (const auto& [name, dims] : tensors) info(name, dims);
  if (!rope_freqs.empty()) info("rope_freqs.weight", {rope_freqs.size()});
  while (m.b.size() % 32) m.b.push_back(0);
  const std::size_t data = m.b.size();
  m.b.resize(data + off);
  if (!rope_freqs.empty()) std::memcpy(m.b.data() + m.b.size() - (rope_freqs.size() * 4 + 31) / 32 * 32, rope_freqs.data(), rope_freqs.size() * 4);
  return m.b;
}

std::vector<std::pair<std::string, std::uint32_t>> sizes(const std::string& a) {
  return {{a + ".embedding_length", 64}, {a + ".block_count", 1}, {a + ".attention.head_count", 4},
          {a + ".attention.head_count_kv", 2}, {a + ".feed_forward_length", 128}, {a + ".context_length", 256}};
}

TEST(GgufModel, ArchitecturesAndTheirFlags) {
  {
    const ModelConfig c = gguf_model_config(GgufFile("q2.gguf", mini("qwen2", sizes("qwen2"), {{"token_embd.weight", {64, 100}}})));
    EXPECT_EQ(c.arch, Arch::kQwen2);
    EXPECT_TRUE(c.qkv_bias);
    EXPECT_FALSE(c.rope_interleaved);
    EXPECT_TRUE(c.tie_word_embeddings);  // no output.weight
    EXPECT_EQ(c.vocab_size, 100);
    EXPECT_EQ(c.head_dim, 16);
  }
  {
    const ModelConfig c = gguf_model_config(
        GgufFile("q3.gguf", mini("qwen3", sizes("qwen3"), {{"token_embd.weight", {64, 100}}, {"output.weight", {64, 100}}})));
    EXPECT_EQ(c.arch, Arch::kQwen3);
    EXPECT_TRUE(c.qk_norm);
    EXPECT_FALSE(c.rope_interleaved);
    EXPECT_FALSE(c.tie_word_embeddings);
  }
  {
    const ModelConfig c = gguf_model_config(
        GgufFile("l3.gguf", mini("llama", sizes("llama"), {{"token_embd.weight", {64, 100}}}, {1, 1, 2, 2, 4, 4, 8, 8})));
    EXPECT_TRUE(c.rope_interleaved);
    EXPECT_EQ(c.rope_freq_factors, (std::vector<double>{1, 1, 2, 2, 4, 4, 8, 8}));
  }
  try {
    gguf_model_config(GgufFile("g.gguf", mini("gemma", sizes("gemma"), {})));
    FAIL() << "gemma accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("general.architecture is 'gemma'; plexus runs GGUF models of architecture llama (Mixtral too), qwen2, qwen3, qwen3moe"),
              std::string::npos) << e.what();
  }
  auto s = sizes("llama");
  s.erase(s.begin());  // no embedding_length
  try {
    gguf_model_config(GgufFile("m.gguf", mini("llama", s, {{"token_embd.weight", {64, 100}}})));
    FAIL() << "missing key accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("m.gguf: metadata key 'llama.embedding_length' is missing"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gguf_model_config(GgufFile("r.gguf", mini("llama", sizes("llama"), {{"token_embd.weight", {64, 100}}}, {1, 2, 3}))),
               InputError);  // rope_freqs of the wrong length
}

// Issue 32 item 16: float metadata goes through config.json's ranges, errors naming the GGUF key
// and the value; rope scaling is read as llama.cpp reads it (type linear unless "none", the
// factor under rope.scaling.factor or the older rope.scale_linear, 0 meaning none).
TEST(GgufModel, FloatMetadataIsCheckedAndRopeScalingReadAsLlamaCpp) {
  const auto config = [](const std::vector<std::pair<std::string, float>>& floats,
                         const std::vector<std::pair<std::string, std::string>>& strings = {}) {
    return gguf_model_config(GgufFile("f.gguf", mini("qwen3", sizes("qwen3"), {{"token_embd.weight", {64, 100}}}, {}, floats, strings)));
  };
  const auto error = [&](const std::vector<std::pair<std::string, float>>& floats,
                         const std::vector<std::pair<std::string, std::string>>& strings = {}) -> std::string {
    try {
      config(floats, strings);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_NE(error({{"qwen3.attention.layer_norm_rms_epsilon", nan}}).find("f.gguf: qwen3.attention.layer_norm_rms_epsilon is nan"),
            std::string::npos);
  EXPECT_NE(error({{"qwen3.attention.layer_norm_rms_epsilon", -1e-6f}}).find("layer_norm_rms_epsilon is -1e-06"), std::string::npos);
  EXPECT_NE(error({{"qwen3.rope.freq_base", 0}}).find("f.gguf: qwen3.rope.freq_base is 0"), std::string::npos);
  EXPECT_NE(error({{"qwen3.rope.freq_base", nan}}).find("qwen3.rope.freq_base is nan"), std::string::npos);
  EXPECT_NE(error({{"qwen3.rope.freq_base", inf}}).find("qwen3.rope.freq_base is inf"), std::string::npos);
  EXPECT_NE(error({{"qwen3.rope.scaling.factor", -2}}).find("qwen3.rope.scaling.factor is -2"), std::string::npos);
  EXPECT_NE(error({{"qwen3.rope.scale_linear", nan}}).find("qwen3.rope.scale_linear is nan"), std::string::npos);
  EXPECT_NE(error({}, {{"qwen3.rope.scaling.type", "yarn"}}).find("'yarn'"), std::string::npos);

  EXPECT_EQ(config({}).rope_scaling, RopeScaling::kNone);
  ModelConfig c = config({{"qwen3.rope.scaling.factor", 4}});  // no type: linear, as llama.cpp
  EXPECT_EQ(c.rope_scaling, RopeScaling::kLinear);
  EXPECT_EQ(c.rope_factor, 4.0);
  c = config({{"qwen3.rope.scale_linear", 2}});
  EXPECT_EQ(c.rope_scaling, RopeScaling::kLinear);
  EXPECT_EQ(c.rope_factor, 2.0);
  EXPECT_EQ(config({{"qwen3.rope.scaling.factor", 0}}).rope_scaling, RopeScaling::kNone);
  EXPECT_EQ(config({{"qwen3.rope.scaling.factor", 4}}, {{"qwen3.rope.scaling.type", "none"}}).rope_scaling, RopeScaling::kNone);
  c = config({{"qwen3.attention.layer_norm_rms_epsilon", 1e-5f}, {"qwen3.rope.freq_base", 1e6f}});
  EXPECT_FLOAT_EQ(static_cast<float>(c.rms_norm_eps), 1e-5f);
  EXPECT_EQ(c.rope_theta, 1e6);
}

// Mixture-of-experts keys as llama.cpp reads them: llama with experts is Mixtral (experts
// feed_forward_length wide, q/k rows permuted); qwen3moe's experts are expert_feed_forward_length
// wide (feed_forward_length / expert_used_count without it), its dense width the expert width
// when feed_forward_length is absent, its top-k renormalised unless expert_weights_norm says no;
// a layer with ffn_gate but no ffn_gate_inp is dense. Bad counts name the keys and numbers.
TEST(GgufModel, MixtureOfExpertsFromTheMetadata) {
  using Ints = std::vector<std::pair<std::string, std::uint32_t>>;
  const auto with = [](Ints ints, const Ints& more) {
    ints.insert(ints.end(), more.begin(), more.end());
    return ints;
  };
  const auto config = [](const std::string& arch, const Ints& ints,
                         std::vector<std::pair<std::string, std::vector<std::uint64_t>>> tensors = {}) {
    tensors.push_back({"token_embd.weight", {64, 100}});
    return gguf_model_config(GgufFile("moe.gguf", mini(arch, ints, tensors)));
  };
  ModelConfig c = config("llama", with(sizes("llama"), {{"llama.expert_count", 4}, {"llama.expert_used_count", 2}}));
  EXPECT_EQ(c.arch, Arch::kMixtral);
  EXPECT_TRUE(c.rope_interleaved);
  EXPECT_EQ(c.moe.num_experts, 4);
  EXPECT_EQ(c.moe.experts_per_token, 2);
  EXPECT_EQ(c.moe.expert_intermediate_size, 128);
  EXPECT_TRUE(c.moe.normalize_top_k);
  EXPECT_FALSE(config("llama", with(sizes("llama"), {{"llama.expert_count", 0}})).is_moe());

  const Ints qwen = with(sizes("qwen3moe"), {{"qwen3moe.expert_count", 8}, {"qwen3moe.expert_used_count", 2}});
  c = config("qwen3moe", with(qwen, {{"qwen3moe.expert_feed_forward_length", 32}}));
  EXPECT_EQ(c.arch, Arch::kQwen3Moe);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.rope_interleaved);
  EXPECT_EQ(c.moe.num_experts, 8);
  EXPECT_EQ(c.moe.expert_intermediate_size, 32);
  EXPECT_EQ(c.intermediate_size, 128);
  EXPECT_TRUE(c.moe.normalize_top_k);
  EXPECT_TRUE(c.moe_layer(0));
  EXPECT_EQ(config("qwen3moe", qwen).moe.expert_intermediate_size, 64);  // llama.cpp: n_ff / n_expert_used
  Ints no_dense;
  for (const auto& kv : qwen)
    if (kv.first != "qwen3moe.feed_forward_length") no_dense.push_back(kv);
  c = config("qwen3moe", with(no_dense, {{"qwen3moe.expert_feed_forward_length", 32}}));
  EXPECT_EQ(c.intermediate_size, 32);
  c = gguf_model_config(GgufFile("n.gguf", mini("qwen3moe", with(qwen, {{"qwen3moe.expert_feed_forward_length", 32}}),
                                                {{"token_embd.weight", {64, 100}}, {"blk.0.ffn_gate.weight", {64, 128}}}, {}, {}, {})));
  EXPECT_EQ(c.moe.mlp_only_layers, (std::vector<std::int64_t>{0}));
  EXPECT_FALSE(c.moe_layer(0));

  const auto error = [&](const std::string& arch, const Ints& ints) -> std::string {
    try {
      config(arch, ints);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error("qwen3moe", with(sizes("qwen3moe"), {{"qwen3moe.expert_count", 8}, {"qwen3moe.expert_used_count", 9}}))
                .find("moe.gguf: qwen3moe.expert_used_count (9) is more than qwen3moe.expert_count (8)"),
            std::string::npos);
  EXPECT_NE(error("llama", with(sizes("llama"), {{"llama.expert_count", 4}}))
                .find("moe.gguf: llama.expert_used_count is missing"),
            std::string::npos);
  EXPECT_NE(error("qwen3moe", sizes("qwen3moe")).find("moe.gguf: qwen3moe.expert_count is missing"), std::string::npos);
}

// A stacked expert tensor is E per-expert tensors at expert e's offset under the Hugging Face
// names; a router keeps its bytes; a stack or router whose dims disagree with the metadata is an
// InputError naming the tensor, its dims and the keys.
TEST(GgufModel, StackedExpertsBecomeOneTensorPerExpert) {
  ModelConfig c = load_model_config(gguf_path("gs-llama-q8_0.gguf"));
  c.arch = Arch::kQwen3Moe;
  c.hidden_size = 64;
  c.moe = {8, 2, 32, true, 1, {}};
  GgufTensor down;
  down.name = "blk.1.ffn_down_exps.weight";
  down.dims = {32, 64, 8};
  down.bytes = 32 * 64 * 8 * 4;
  const std::vector<GgufHfTensor> parts = gguf_hf_tensors(down, c, "x.gguf");
  ASSERT_EQ(parts.size(), 8u);
  EXPECT_EQ(parts[3].hf, "model.layers.1.mlp.experts.3.down_proj.weight");
  EXPECT_EQ(parts[3].shape, (std::vector<std::int64_t>{64, 32}));
  EXPECT_EQ(parts[3].offset, 3u * 32 * 64 * 4);
  EXPECT_EQ(parts[3].bytes, 32u * 64 * 4);
  GgufTensor gate = down;
  gate.name = "blk.0.ffn_gate_exps.weight";
  gate.dims = {64, 32, 8};
  EXPECT_EQ(gguf_hf_tensors(gate, c, "x.gguf")[7].hf, "model.layers.0.mlp.experts.7.gate_proj.weight");
  GgufTensor router;
  router.name = "blk.0.ffn_gate_inp.weight";
  router.dims = {64, 8};
  router.bytes = 64 * 8 * 4;
  const std::vector<GgufHfTensor> r = gguf_hf_tensors(router, c, "x.gguf");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].hf, "model.layers.0.mlp.gate.weight");
  EXPECT_EQ(r[0].shape, (std::vector<std::int64_t>{8, 64}));
  c.arch = Arch::kMixtral;
  EXPECT_EQ(gguf_hf_tensors(router, c, "x.gguf")[0].hf, "model.layers.0.block_sparse_moe.gate.weight");
  EXPECT_EQ(gguf_hf_tensors(gate, c, "x.gguf")[2].hf, "model.layers.0.block_sparse_moe.experts.2.w1.weight");
  EXPECT_EQ(gguf_hf_tensors(down, c, "x.gguf")[2].hf, "model.layers.1.block_sparse_moe.experts.2.w2.weight");
  c.arch = Arch::kQwen3Moe;

  const auto error = [&](const GgufTensor& t) -> std::string {
    try {
      gguf_hf_tensors(t, c, "x.gguf");
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  GgufTensor fewer = gate;
  fewer.dims = {64, 32, 7};
  EXPECT_NE(error(fewer).find("x.gguf: tensor 'blk.0.ffn_gate_exps.weight' holds 7 experts (ne [64, 32, 7]) but qwen3moe.expert_count 8"),
            std::string::npos) << error(fewer);
  GgufTensor narrow = down;
  narrow.dims = {16, 64, 8};
  EXPECT_NE(error(narrow).find("tensor 'blk.1.ffn_down_exps.weight' has ne [16, 64, 8] but the metadata gives [32, 64, 8] "
                               "(qwen3moe.embedding_length 64, qwen3moe.expert_feed_forward_length 32, qwen3moe.expert_count 8)"),
            std::string::npos) << error(narrow);
  GgufTensor flat = down;
  flat.dims = {32, 512};
  EXPECT_NE(error(flat).find("holds no stack of experts (ne [32, 512])"), std::string::npos) << error(flat);
  GgufTensor wide = router;
  wide.dims = {64, 4};
  EXPECT_NE(error(wide).find("tensor 'blk.0.ffn_gate_inp.weight' has ne [64, 4] but the metadata gives [64, 8]"), std::string::npos)
      << error(wide);
  c.moe = {};  // a dense model: no such tensors
  EXPECT_TRUE(gguf_hf_tensors(down, c, "x.gguf").empty());
}

}  // namespace
}  // namespace plexus

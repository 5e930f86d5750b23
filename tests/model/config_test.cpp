// config.json parsing: architectures, defaults and the errors for bad fields.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "model/config.h"
#include "model/module_tree.h"

namespace plexus {
namespace {

Json base() {
  return Json{{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 64}, {"num_hidden_layers", 2},
              {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 128}, {"vocab_size", 100}};
}

std::string error_of(const Json& j) {
  try {
    parse_model_config(j, "config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsAndDerivedFields) {
  const ModelConfig c = parse_model_config(base(), "config.json");
  EXPECT_EQ(c.arch, Arch::kLlama);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_FALSE(c.qkv_bias);
  Json q = base();
  q["architectures"] = {"Qwen2ForCausalLM"};
  EXPECT_TRUE(parse_model_config(q, "c").qkv_bias);
  q["architectures"] = {"Qwen3ForCausalLM"};
  q["head_dim"] = 32;
  const ModelConfig q3 = parse_model_config(q, "c");
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_EQ(q3.q_dim(), 128);
  Json r = base();
  r["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  EXPECT_EQ(parse_model_config(r, "c").rope_scaling, RopeScaling::kLlama3);
  Json m = base();
  m["architectures"] = {"MistralForCausalLM"};
  m["sliding_window"] = 4096;
  EXPECT_EQ(parse_model_config(m, "c").sliding_window, 4096);
}

TEST(Config, ErrorsNameTheField) {
  Json j = base();
  j["architectures"] = {"FalconForCausalLM"};
  EXPECT_NE(error_of(j).find("FalconForCausalLM"), std::string::npos);
  j = base();
  j.erase("hidden_size");
  EXPECT_NE(error_of(j).find("hidden_size"), std::string::npos);
  j = base();
  j["num_key_value_heads"] = 3;
  EXPECT_NE(error_of(j).find("num_key_value_heads"), std::string::npos);
  j = base();
  j["vocab_size"] = "many";
  EXPECT_NE(error_of(j).find("vocab_size"), std::string::npos);
  j = base();
  j["rope_scaling"] = {{"type", "dynamic"}};
  EXPECT_NE(error_of(j).find("dynamic"), std::string::npos);
  j["rope_scaling"] = {{"type", "yarn"}, {"beta_fast", -1}};
  EXPECT_NE(error_of(j).find("rope_scaling.beta_fast is -1"), std::string::npos);
}

// gpt-oss's config.json read with GptOssConfig's defaults (issue 35).
TEST(Config, GptOssDefaults) {
  Json j = base();
  j["architectures"] = {"GptOssForCausalLM"};
  j["num_hidden_layers"] = 3;
  j["num_local_experts"] = 8;
  const ModelConfig c = parse_model_config(j, "config.json");
  EXPECT_EQ(c.arch, Arch::kGptOss);
  EXPECT_TRUE(c.qkv_bias && c.o_bias && c.attention_sinks);
  EXPECT_EQ(c.moe.num_experts, 8);
  EXPECT_EQ(c.moe.experts_per_token, 4);
  EXPECT_EQ(c.moe.expert_intermediate_size, c.intermediate_size);
  EXPECT_TRUE(c.moe.top_k_then_softmax && c.moe.biases);
  EXPECT_DOUBLE_EQ(c.moe.swiglu_limit, 7.0);
  EXPECT_DOUBLE_EQ(c.moe.swiglu_alpha, 1.702);
  EXPECT_EQ(c.layer_window(0), 128);  // even layers slide, odd layers see everything
  EXPECT_EQ(c.layer_window(1), 0);
  EXPECT_EQ(c.layer_window(2), 128);
  EXPECT_EQ(c.rope_scaling, RopeScaling::kYarn);
  EXPECT_DOUBLE_EQ(c.rope_factor, 32.0);
  EXPECT_EQ(c.rope_original_max_position, 4096);
  EXPECT_FALSE(c.rope_truncate);
  EXPECT_DOUBLE_EQ(c.rope_attention_factor, 0.1 * std::log(32.0) + 1.0);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 150000.0);
  EXPECT_EQ(c.max_position_embeddings, 131072);
}

TEST(ModuleTree, NamesFollowHuggingFace) {
  Json j = base();
  j["tie_word_embeddings"] = true;
  const ModuleTree t = ModuleTree::from_config(parse_model_config(j, "c"));
  ASSERT_EQ(t.params().size(), 1 + 2 * 9 + 2u);
  EXPECT_EQ(t.params()[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(t.params()[1].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(t.params()[1].shape, (std::vector<std::int64_t>{64, 64}));
  EXPECT_EQ(t.params()[2].shape, (std::vector<std::int64_t>{32, 64}));
  EXPECT_EQ(t.params().back().name, "lm_head.weight");
  EXPECT_EQ(*t.params().back().tied_to, "model.embed_tokens.weight");
  EXPECT_EQ(t.find("model.layers.1.mlp.down_proj.weight")->layer, 1);
}

TEST(Config, SizesFarBeyondAnyModelAreRefusedBeforeAnyWork) {
  // hidden_size 10^9 printed "-6446677952709551616 parameters"; 10^5 layers ran for minutes.
  for (const auto& [key, value] : std::vector<std::pair<std::string, long long>>{
           {"hidden_size", 1000000000}, {"num_hidden_layers", 100000}, {"intermediate_size", 1LL << 40},
           {"vocab_size", 1LL << 40}, {"num_attention_heads", 1 << 20}, {"max_position_embeddings", 1LL << 50}}) {
    Json j = base();
    j[key] = value;
    const std::string m = error_of(j);
    EXPECT_NE(m.find("config.json: field '" + key + "' is " + std::to_string(value) + ", above"), std::string::npos) << key << ": " << m;
  }
  Json j = base();
  j["head_dim"] = 16384;
  j["num_attention_heads"] = 4096;
  j["num_key_value_heads"] = 4096;
  EXPECT_NE(error_of(j).find("num_attention_heads x head_dim"), std::string::npos) << error_of(j);
  j = base();
  j["max_position_embeddings"] = -5;
  EXPECT_NE(error_of(j).find("max_position_embeddings"), std::string::npos);
}

TEST(ModuleTree, ElementCountsAreChecked) {
  ParamInfo p{"w", "m", {std::int64_t{1} << 40, std::int64_t{1} << 40}, -1, std::nullopt, std::nullopt};
  try {
    (void)p.numel();
    FAIL() << "2^80 elements counted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the element count of 'w' overflows"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace plexus

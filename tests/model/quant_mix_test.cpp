// The named mixes (model/quant_mix.h) against llama-quantize's own choices: every tensor of every
// file in tests/data/gguf/mix_choices.jsonl (benchmarks/llama_cpp/record_mix_choices.sh: three
// shapes, every mix) gets the type llama.cpp gave it; plus names, aliases and the fallback rule.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/json.h"
#include "model/quant_mix.h"

namespace plexus {
namespace {

const std::string kChoices = std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf/mix_choices.jsonl";

TEST(QuantMix, EveryTensorTakesLlamaQuantizesType) {
  std::ifstream in(kChoices);
  ASSERT_TRUE(in) << kChoices;
  std::string line;
  std::set<std::string> cases, mixes;
  int tensors = 0, lines = 0;
  while (std::getline(in, line)) {
    const Json j = parse_json(line, kChoices);
    ++lines;
    const std::string mix_name = j["mix"];
    const std::optional<QuantMix> mix = parse_quant_mix(mix_name);
    ASSERT_TRUE(mix) << mix_name;
    const Json& f = j["facts"];
    QuantModelFacts facts;
    facts.n_layers = f["n_layers"];
    facts.n_heads = f["n_heads"];
    facts.n_kv_heads = f["n_kv_heads"];
    facts.tied_embeddings = f["tied_embeddings"];
    cases.insert(j["case"].get<std::string>());
    mixes.insert(mix_name);
    for (const auto& [name, t] : j["tensors"].items()) {
      std::vector<std::int64_t> shape = t["dims"].get<std::vector<std::int64_t>>();
      std::reverse(shape.begin(), shape.end());  // GGUF lists the row first
      const std::optional<DType> ours = quant_mix_type(*mix, name, shape, facts);
      const std::string theirs = t["type"];
      const std::string got = ours ? std::string(dtype_name(*ours)) : "as stored";
      if (!ours) {
        EXPECT_EQ(shape.size(), 1u) << j["case"] << " " << mix_name << " " << name << ": llama.cpp chose " << theirs;
      } else {
        EXPECT_EQ(got, theirs) << j["case"] << " " << mix_name << " " << name;
      }
      ++tensors;
    }
  }
  EXPECT_EQ(cases.size(), 3u);
  EXPECT_EQ(mixes.size(), quant_mixes().size()) << "every mix recorded";
  EXPECT_EQ(lines, 3 * static_cast<int>(quant_mixes().size()));
  EXPECT_GT(tensors, 1000);
}

TEST(QuantMix, HuggingFaceNamesTakeTheSameTypes) {
  const QuantModelFacts facts{30, 9, 3, true};
  const std::vector<std::int64_t> v{192, 576}, down{576, 1536}, embd{32000, 576};
  for (const QuantMixInfo& m : quant_mixes()) {
    for (int layer : {0, 4, 5, 29}) {
      const std::string l = std::to_string(layer);
      EXPECT_EQ(quant_mix_type(m.mix, "model.layers." + l + ".self_attn.v_proj.weight", v, facts),
                quant_mix_type(m.mix, "blk." + l + ".attn_v.weight", v, facts)) << m.name << " " << layer;
      EXPECT_EQ(quant_mix_type(m.mix, "model.layers." + l + ".mlp.down_proj.weight", down, facts),
                quant_mix_type(m.mix, "blk." + l + ".ffn_down.weight", down, facts)) << m.name << " " << layer;
    }
    EXPECT_EQ(quant_mix_type(m.mix, "model.embed_tokens.weight", embd, facts), quant_mix_type(m.mix, "token_embd.weight", embd, facts));
    EXPECT_EQ(quant_mix_type(m.mix, "lm_head.weight", embd, facts), quant_mix_type(m.mix, "output.weight", embd, facts));
    EXPECT_EQ(quant_mix_type(m.mix, "model.norm.weight", std::vector<std::int64_t>{576}, facts), std::nullopt);
  }
}

// Rules the recorded shapes cannot show: 4+ query heads per KV head, and the 70B attn_v rule.
TEST(QuantMix, GroupedQueryAndSeventyBRules) {
  const std::vector<std::int64_t> v{512, 2048};
  const QuantModelFacts gqa4{16, 32, 8, true};
  EXPECT_EQ(quant_mix_type(QuantMix::kQ2_K, "blk.7.attn_v.weight", v, gqa4), DType::kQ4_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kIQ4_XS, "blk.7.attn_v.weight", v, gqa4), DType::kQ5_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kIQ4_NL, "blk.7.attn_v.weight", v, gqa4), DType::kQ5_K);
  const QuantModelFacts seventy{80, 64, 8, false};
  EXPECT_EQ(quant_mix_type(QuantMix::kQ3_K_M, "blk.40.attn_v.weight", v, seventy), DType::kQ5_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kQ4_K_S, "blk.40.attn_v.weight", v, seventy), DType::kQ5_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kQ4_K_M, "blk.41.attn_v.weight", v, seventy), DType::kQ5_K);
}

// llama.cpp's 8-expert rules (Mixtral 8x7B): attn_k and attn_v Q8_0, attn_output Q5_K in the
// low-bit mixes (instead of Q2_K's Q3_K); other expert counts keep the dense rules. Experts'
// projections take the types their roles do under either naming; routers keep theirs.
TEST(QuantMix, EightExpertRules) {
  const std::vector<std::int64_t> m{4096, 4096}, stack{8, 4096, 14336};
  QuantModelFacts eight{32, 32, 8, false, 8};
  for (const QuantMix mix : {QuantMix::kQ2_K, QuantMix::kQ4_K_M, QuantMix::kQ4_0, QuantMix::kQ8_0}) {
    EXPECT_EQ(quant_mix_type(mix, "blk.3.attn_v.weight", m, eight), DType::kQ8_0) << quant_mix_info(mix).name;
    EXPECT_EQ(quant_mix_type(mix, "model.layers.3.self_attn.k_proj.weight", m, eight), DType::kQ8_0) << quant_mix_info(mix).name;
  }
  EXPECT_EQ(quant_mix_type(QuantMix::kQ2_K, "blk.3.attn_output.weight", m, eight), DType::kQ5_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kQ4_K_M, "blk.3.attn_output.weight", m, eight), DType::kQ5_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kQ4_0, "blk.3.attn_output.weight", m, eight), DType::kQ4_0);
  EXPECT_EQ(quant_mix_type(QuantMix::kQ4_K_M, "blk.0.ffn_down_exps.weight", std::vector<std::int64_t>{8, 4096, 14336}, eight),
            DType::kQ6_K);  // down's more-bits layer, as ffn_down
  EXPECT_EQ(quant_mix_type(QuantMix::kQ4_K_M, "model.layers.0.block_sparse_moe.experts.5.w2.weight",
                           std::vector<std::int64_t>{4096, 14336}, eight),
            DType::kQ6_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kQ4_K_M, "blk.2.ffn_gate_exps.weight", stack, eight), DType::kQ4_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kQ4_K_M, "blk.2.ffn_gate_inp.weight", std::vector<std::int64_t>{8, 4096}, eight), std::nullopt);
  QuantModelFacts many = eight;
  many.n_experts = 128;  // Qwen3-30B-A3B: the dense rules
  EXPECT_EQ(quant_mix_type(QuantMix::kQ2_K, "blk.3.attn_k.weight", m, many), DType::kQ2_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kQ2_K, "blk.3.attn_output.weight", m, many), DType::kQ3_K);
  EXPECT_EQ(quant_mix_type(QuantMix::kQ4_0, "blk.3.attn_v.weight", m, many), DType::kQ4_0);
}

TEST(QuantMix, NamesAnyCaseAndLlamaQuantizesAliases) {
  EXPECT_EQ(parse_quant_mix("q4_k_m"), QuantMix::kQ4_K_M);
  EXPECT_EQ(parse_quant_mix("Q4_K"), QuantMix::kQ4_K_M);
  EXPECT_EQ(parse_quant_mix("q5_k"), QuantMix::kQ5_K_M);
  EXPECT_EQ(parse_quant_mix("Q3_K"), QuantMix::kQ3_K_M);
  EXPECT_EQ(parse_quant_mix("iq4_xs"), QuantMix::kIQ4_XS);
  EXPECT_EQ(parse_quant_mix("q8_0"), QuantMix::kQ8_0);
  EXPECT_EQ(parse_quant_mix("Q4_K_X"), std::nullopt);
  EXPECT_EQ(parse_quant_mix(""), std::nullopt);
  for (const QuantMixInfo& m : quant_mixes()) {
    EXPECT_EQ(parse_quant_mix(m.name), m.mix);
    EXPECT_FALSE(m.description.empty());
  }
}

TEST(QuantMix, RowsNoBlockDividesFallBackToF16) {
  const QuantModelFacts facts{4, 4, 2, false};
  const std::vector<std::int64_t> odd{64, 176};  // 176: neither 256 nor 32 divides it
  for (const QuantMixInfo& m : quant_mixes()) {
    EXPECT_EQ(quant_mix_type(m.mix, "blk.2.ffn_down.weight", odd, facts), DType::kF16) << m.name;
  }
}

}  // namespace
}  // namespace plexus

// gpt-oss's experts as OpenAI's checkpoints store them (MXFP4 NAME_blocks + NAME_scales, issue
// 35): each expert's gate (the even rows of gate_up_proj), up (the odd rows) and down load as
// plexus MXFP4 matrices holding the stored blocks (no dequantised copy); the module tree and the
// planner size them as stored; quantising on load leaves them as they are.
#include <gtest/gtest.h>

#include <cstring>

#include "core/json.h"
#include "core/thread_pool.h"
#include "kernels/block_formats.h"
#include "kernels/mxfp4_hf.h"
#include "model/checkpoint.h"
#include "model/llama_family.h"
#include "model/make_model.h"
#include "model/module_tree.h"
#include "model/quant_policy.h"
#include "planner/moe_reads.h"
#include "planner/sized_tree.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::TempDir;

std::string mxfp4_gpt_oss(const TempDir& dir) {
  MakeModelOptions o;
  o.arch = Arch::kGptOss;  // 4 layers, 4 experts of width 64, hidden 64
  o.vocab_size = 300;
  o.mxfp4_experts = true;
  write_random_model(dir.path(), o);
  return dir.path();
}

// Row r of expert e of the stored tensor NAME ((E, R, 2, 16) blocks: 2 blocks a row) repacked.
std::vector<BlockMXFP4> stored_row(const Checkpoint& ck, const std::string& name, std::int64_t rows, std::int64_t e,
                                   std::int64_t r) {
  const TensorRef b = ck.get(name + "_blocks"), s = ck.get(name + "_scales");
  const std::int64_t first = (e * rows + r) * 2;
  std::vector<BlockMXFP4> out(2);
  mxfp4_from_hf_blocks(static_cast<const std::uint8_t*>(b.data) + first * 16, static_cast<const std::uint8_t*>(s.data) + first, 2,
                       out.data());
  return out;
}

TEST(GptOssMxfp4, ExpertsAreTheStoredBlocks) {
  TempDir dir("gpt-oss-mxfp4-load");
  const std::string path = mxfp4_gpt_oss(dir);
  const Json j = read_json_file(path + "/config.json");
  EXPECT_EQ(j["quantization_config"]["quant_method"], "mxfp4");
  const ModelConfig c = load_model_config(path);
  const Checkpoint ck(path);
  EXPECT_FALSE(ck.contains("model.layers.0.mlp.experts.gate_up_proj"));
  const LlamaFamilyModel m(c, ck);
  const std::int64_t E = 4, H = 64, Ie = 64;
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = ModuleTree::layer_prefix(l) + ".mlp.experts.";
    ASSERT_EQ(m.layer_weights(l).experts.size(), static_cast<std::size_t>(E));
    for (std::int64_t e = 0; e < E; ++e) {
      const ExpertWeights& x = m.layer_weights(l).experts[static_cast<std::size_t>(e)];
      for (const WeightMatrix* w : {&x.gate, &x.up, &x.down}) EXPECT_EQ(w->dtype, DType::kMXFP4);
      EXPECT_EQ(x.gate.rows, Ie);
      EXPECT_EQ(x.gate.cols, H);
      EXPECT_EQ(x.down.rows, H);
      EXPECT_EQ(x.down.cols, Ie);
      for (std::int64_t i = 0; i < Ie; ++i) {
        EXPECT_EQ(std::memcmp(x.gate.row(i), stored_row(ck, p + "gate_up_proj", 2 * Ie, e, 2 * i).data(), 34), 0) << l << e << i;
        EXPECT_EQ(std::memcmp(x.up.row(i), stored_row(ck, p + "gate_up_proj", 2 * Ie, e, 2 * i + 1).data(), 34), 0) << l << e << i;
      }
      for (std::int64_t h = 0; h < H; ++h) {
        EXPECT_EQ(std::memcmp(x.down.row(h), stored_row(ck, p + "down_proj", H, e, h).data(), 34), 0) << l << e << h;
      }
    }
  }
  // The tree lists the fused names, MXFP4 in their stored orientation; the planner sizes them at
  // 17 bytes a block of 32 and counts the same parameters as the bf16 model's.
  const ModuleTree tree = ModuleTree::from_checkpoint(c, ck);
  const ParamInfo* gu = tree.find("model.layers.0.mlp.experts.gate_up_proj");
  const ParamInfo* dn = tree.find("model.layers.0.mlp.experts.down_proj");
  ASSERT_TRUE(gu && dn);
  EXPECT_EQ(gu->dtype, DType::kMXFP4);
  EXPECT_EQ(gu->shape, (std::vector<std::int64_t>{E, 2 * Ie, H}));
  EXPECT_EQ(dn->shape, (std::vector<std::int64_t>{E, H, Ie}));
  EXPECT_TRUE(tree.quantized());
  const SizedTree sized = SizedTree::build(tree, WeightDType::kBF16);
  EXPECT_EQ(sized.size_of(gu->name), E * 2 * Ie * (H / 32) * 17);
  EXPECT_EQ(sized.size_of(dn->name), E * H * (Ie / 32) * 17);
  const std::int64_t biases = (E * 2 * Ie + E * H) * 2;  // bf16
  EXPECT_EQ(sized.size_of("model.layers.0.mlp.experts"), E * 3 * Ie * (H / 32) * 17 + biases);
  EXPECT_EQ(active_parameters(tree), active_parameters(ModuleTree::from_config(c)));
  EXPECT_EQ(tree.params().size(), ModuleTree::from_config(c).params().size());
}

// --quantize converts the f32/bf16/f16 matrices and leaves the MXFP4 experts as stored, in the
// checkpoint (as the run reads it) and in the planner's sizes.
TEST(GptOssMxfp4, QuantizeLeavesTheExpertsAsStored) {
  TempDir dir("gpt-oss-mxfp4-quantize");
  const std::string path = mxfp4_gpt_oss(dir);
  const ModelConfig c = load_model_config(path);
  Checkpoint ck(path);
  ThreadPool pool(1);
  ck.quantize(QuantMix::kQ8_0, quant_model_facts(c), pool);
  EXPECT_TRUE(ck.quantized());
  const LlamaFamilyModel m(c, ck);
  EXPECT_EQ(m.layer_weights(0).q.dtype, DType::kQ8_0);
  EXPECT_EQ(m.layer_weights(0).experts[0].gate.dtype, DType::kMXFP4);
  EXPECT_EQ(m.layer_weights(0).experts[0].down.dtype, DType::kMXFP4);
  const Checkpoint plain(path);
  EXPECT_EQ(std::memcmp(m.layer_weights(3).experts[2].up.row(5), stored_row(plain, "model.layers.3.mlp.experts.gate_up_proj", 128, 2, 11).data(), 34), 0);
  ModuleTree tree = ModuleTree::from_checkpoint(c, plain);
  tree.quantize_as(QuantMix::kQ8_0);
  EXPECT_EQ(tree.find("model.layers.0.self_attn.q_proj.weight")->dtype, DType::kQ8_0);
  EXPECT_EQ(tree.find("model.layers.0.mlp.experts.gate_up_proj")->dtype, DType::kMXFP4);
}

}  // namespace
}  // namespace plexus

// The real-shape presets (Llama 3.2 1B, Llama 3.1 8B) and the bulk weight writer behind them:
// shapes and config.json as Meta's, bytes independent of threads and block size, the values'
// distribution, an interrupt leaving nothing behind.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/mmap_file.h"
#include "kernels/block_formats.h"
#include "kernels/mxfp4_hf.h"
#include "kernels/quantize.h"
#include "kernels/ref/dequantize.h"
#include "model/bulk_weights.h"
#include "model/make_model.h"
#include "model/module_tree.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::TempDir;

std::int64_t stored_params(const ModelConfig& c) {
  std::int64_t n = 0;
  const ModuleTree tree = ModuleTree::from_config(c);
  for (const ParamInfo& p : tree.params()) {
    if (!p.tied_to) n += p.numel();
  }
  return n;
}

TEST(RealPresets, HaveMetasShapes) {
  const ModelConfig one = preset_config("llama-3.2-1b", Arch::kLlama, 0);
  EXPECT_EQ(stored_params(one), 1235814400);  // Llama-3.2-1B: 1.24B with tied embeddings
  EXPECT_TRUE(one.tie_word_embeddings);
  EXPECT_EQ(one.head_dim, 64);
  const ModelConfig eight = preset_config("llama-3.1-8b", Arch::kLlama, 0);
  EXPECT_EQ(stored_params(eight), 8030261248);  // Llama-3.1-8B
  EXPECT_FALSE(eight.tie_word_embeddings);
  EXPECT_EQ(eight.head_dim, 128);
  EXPECT_THROW(preset_config("llama-3.1-8b", Arch::kQwen2, 0), InputError);
  EXPECT_TRUE(is_bulk_preset("llama-3.2-1b"));
  EXPECT_FALSE(is_bulk_preset("small"));
}

// gpt-oss-20b's shape (issue 35): OpenAI's 20,914,757,184 parameters, its config.json read back
// as GptOssConfig's fields.
TEST(RealPresets, GptOss20bHasOpenAisShape) {
  const ModelConfig c = preset_config("gpt-oss-20b", Arch::kLlama, 0);  // --arch left at its default
  EXPECT_EQ(stored_params(c), 20914757184);
  EXPECT_TRUE(is_bulk_preset("gpt-oss-20b"));
  EXPECT_THROW(preset_config("gpt-oss-20b", Arch::kQwen2, 0), InputError);
  const Json j = config_to_json(c, DType::kBF16);
  EXPECT_EQ(j["architectures"][0], "GptOssForCausalLM");
  EXPECT_EQ(j["layer_types"][0], "sliding_attention");
  EXPECT_EQ(j["layer_types"][1], "full_attention");
  EXPECT_EQ(j["rope_scaling"]["truncate"], false);
  const ModelConfig back = parse_model_config(j, "gpt-oss-20b");
  EXPECT_EQ(back.arch, Arch::kGptOss);
  EXPECT_EQ(back.hidden_size, 2880);
  EXPECT_EQ(back.num_layers, 24);
  EXPECT_EQ(back.num_heads, 64);
  EXPECT_EQ(back.num_kv_heads, 8);
  EXPECT_EQ(back.head_dim, 64);
  EXPECT_EQ(back.vocab_size, 201088);
  EXPECT_EQ(back.moe.num_experts, 32);
  EXPECT_EQ(back.moe.experts_per_token, 4);
  EXPECT_EQ(back.moe.expert_intermediate_size, 2880);
  EXPECT_EQ(back.layer_window(0), 128);
  EXPECT_EQ(back.layer_window(23), 0);
  EXPECT_EQ(back.rope_scaling, RopeScaling::kYarn);
  EXPECT_EQ(back.rope_factor, 32.0);
  EXPECT_EQ(back.rope_original_max_position, 4096);
  EXPECT_EQ(back.rope_theta, 150000.0);
  EXPECT_FALSE(back.rope_truncate);
}

TEST(RealPresets, ConfigJsonRoundTripsWithRopeScaling) {
  for (const char* preset : {"llama-3.2-1b", "llama-3.1-8b"}) {
    const ModelConfig c = preset_config(preset, Arch::kLlama, 0);
    const Json j = config_to_json(c, DType::kBF16);
    EXPECT_EQ(j["architectures"][0], "LlamaForCausalLM");
    EXPECT_EQ(j["torch_dtype"], "bfloat16");
    EXPECT_EQ(j["bos_token_id"], 128000);
    EXPECT_EQ(j["eos_token_id"], 128001);
    EXPECT_EQ(j["rope_scaling"]["rope_type"], "llama3");
    EXPECT_EQ(j["max_position_embeddings"], 131072);
    const ModelConfig back = parse_model_config(j, preset);
    EXPECT_EQ(back.rope_scaling, RopeScaling::kLlama3);
    EXPECT_EQ(back.rope_factor, c.rope_factor);
    EXPECT_EQ(back.rope_low_freq_factor, 1.0);
    EXPECT_EQ(back.rope_high_freq_factor, 4.0);
    EXPECT_EQ(back.rope_original_max_position, 8192);
    EXPECT_EQ(back.rope_theta, 500000.0);
    EXPECT_EQ(back.tie_word_embeddings, c.tie_word_embeddings);
    EXPECT_EQ(back.intermediate_size, c.intermediate_size);
  }
  EXPECT_EQ(preset_config("llama-3.2-1b", Arch::kLlama, 0).rope_factor, 32.0);
  EXPECT_EQ(preset_config("llama-3.1-8b", Arch::kLlama, 0).rope_factor, 8.0);
}

// The mixtures of experts at real shape: their config.json reads back with the same experts, and
// they fix their architecture.
TEST(RealPresets, MoePresetsRoundTripTheirExperts) {
  for (const char* preset : {"mixtral-8x7b", "qwen3-30b-a3b", "moe-cpu-bench"}) {
    const std::optional<Arch> arch = preset_arch(preset);
    ASSERT_TRUE(arch.has_value()) << preset;
    EXPECT_TRUE(is_bulk_preset(preset));
    const ModelConfig c = preset_config(preset, *arch, 0);
    const ModelConfig back = parse_model_config(config_to_json(c, DType::kBF16), preset);
    EXPECT_EQ(back.arch, *arch) << preset;
    EXPECT_EQ(back.moe.num_experts, c.moe.num_experts) << preset;
    EXPECT_EQ(back.moe.experts_per_token, c.moe.experts_per_token) << preset;
    EXPECT_EQ(back.moe.expert_intermediate_size, c.moe.expert_intermediate_size) << preset;
    EXPECT_EQ(back.moe.normalize_top_k, true) << preset;
    EXPECT_EQ(back.head_dim, 128) << preset;
    EXPECT_EQ(back.tie_word_embeddings, false) << preset;
    EXPECT_EQ(back.rope_theta, 1000000.0) << preset;
    EXPECT_EQ(stored_params(back), stored_params(c)) << preset;
    EXPECT_THROW(preset_config(preset, Arch::kLlama, 0), InputError) << preset;
  }
  const ModelConfig q = preset_config("qwen3-30b-a3b", Arch::kQwen3Moe, 0);
  EXPECT_EQ(q.max_position_embeddings, 40960);
  EXPECT_EQ(q.rms_norm_eps, 1e-6);
  EXPECT_EQ(q.vocab_size, 151936);
  const ModelConfig m = preset_config("mixtral-8x7b", Arch::kMixtral, 0);
  EXPECT_EQ(m.max_position_embeddings, 32768);
  EXPECT_EQ(m.rms_norm_eps, 1e-5);
  EXPECT_EQ(m.moe.expert_intermediate_size, 14336);
  EXPECT_FALSE(preset_arch("tiny").has_value());
}

TEST(BulkWeights, NormalQuantile) {
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-12);
  EXPECT_NEAR(normal_quantile(0.975), 1.959963985, 1e-6);
  EXPECT_NEAR(normal_quantile(0.001), -3.090232306, 1e-6);
  EXPECT_NEAR(normal_quantile(0.3) + normal_quantile(0.7), 0.0, 1e-9);
}

const std::vector<BulkTensor> kTensors = {
    {"a.weight", {3, 70001}, false, 0}, {"n.norm.weight", {17}, true, 1}, {"b.weight", {5}, false, 2}};

std::string write(const TempDir& dir, const std::string& name, BulkOptions o) {
  const std::string path = dir.path() + "/" + name;
  const std::uint64_t n = write_bulk_safetensors(path, kTensors, o);
  std::string bytes = read_text_file_or_empty(path);
  EXPECT_EQ(bytes.size(), n);
  return bytes;
}

TEST(BulkWeights, BytesDependOnTheSeedAloneAndHaveTheRightDistribution) {
  TempDir dir("bulk");
  BulkOptions a;
  a.threads = 1, a.block_elements = 1;  // one run of 65536 per block
  BulkOptions b;
  b.threads = 3, b.block_elements = 1 << 20;
  const std::string one = write(dir, "one.safetensors", a);
  const std::string two = write(dir, "two.safetensors", b);
  EXPECT_EQ(one, two);
  BulkOptions other = b;
  other.seed = 1;
  EXPECT_NE(write(dir, "three.safetensors", other), one);

  std::uint64_t start = 0;
  const auto infos = parse_safetensors_header(reinterpret_cast<const std::uint8_t*>(one.data()), one.size(), one.size(),
                                              "one", &start);
  ASSERT_EQ(infos.size(), 3u);
  for (const auto& t : infos) {
    EXPECT_EQ(t.dtype, DType::kBF16);
    std::vector<double> v;
    const auto* p = reinterpret_cast<const std::uint16_t*>(one.data() + start + t.begin);
    for (std::int64_t i = 0; i < t.numel(); ++i) v.push_back(bf16_to_f32(p[i]));
    double mean = 0, sq = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    for (double x : v) sq += (x - mean) * (x - mean);
    const double sd = std::sqrt(sq / static_cast<double>(v.size()));
    if (t.name == "a.weight") {
      EXPECT_NEAR(mean, 0.0, 3e-4);
      EXPECT_NEAR(sd, 0.02, 0.0005);
    } else if (t.name == "n.norm.weight") {
      EXPECT_NEAR(mean, 1.0, 0.1);
      EXPECT_GT(sd, 0.02);
    }
  }
}

TEST(BulkWeights, F32ValuesAndInterrupt) {
  TempDir dir("bulk32");
  BulkOptions o;
  o.dtype = DType::kF32, o.std = 0.5;
  const std::string bytes = write(dir, "f.safetensors", o);
  std::uint64_t start = 0;
  const auto infos = parse_safetensors_header(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(),
                                              bytes.size(), "f", &start);
  const auto& a = infos[0].name == "a.weight" ? infos[0] : infos[1].name == "a.weight" ? infos[1] : infos[2];
  const auto* p = reinterpret_cast<const float*>(bytes.data() + start + a.begin);
  double sq = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) sq += static_cast<double>(p[i]) * p[i];
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(a.numel())), 0.5, 0.01);

  o.stop_requested = [] { return true; };
  EXPECT_THROW(write_bulk_safetensors(dir.path() + "/stopped.safetensors", kTensors, o), Interrupted);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.path().filename() != "f.safetensors";
  EXPECT_EQ(files, 0);  // neither the file nor its temporary
}

// An MXFP4 tensor (gpt-oss-20b's experts) is written as NAME_blocks + NAME_scales in Hugging
// Face's layout, holding exactly the f32 values the same tensor would get unquantised, quantised
// (llama.cpp's rule) and repacked; the bytes still depend on the seed alone; the tensor after it
// is unaffected.
TEST(BulkWeights, Mxfp4TensorsAreTheF32ValuesQuantised) {
  TempDir dir("bulk-mxfp4");
  const std::vector<BulkTensor> tensors = {{"e.w", {2, 3, 32 * 1024}, false, 0, true}, {"z.weight", {5, 7}, false, 1}};
  BulkOptions a;
  a.threads = 1, a.block_elements = 1, a.std = 0.3;
  BulkOptions b = a;
  b.threads = 3, b.block_elements = 1 << 20;
  const std::string pa = dir / "a.safetensors", pb = dir / "b.safetensors", pf = dir / "f.safetensors";
  write_bulk_safetensors(pa, tensors, a);
  write_bulk_safetensors(pb, tensors, b);
  const std::string bytes = read_text_file_or_empty(pa);
  EXPECT_EQ(read_text_file_or_empty(pb), bytes);
  BulkOptions f = a;
  f.dtype = DType::kF32;
  std::vector<BulkTensor> plain = tensors;
  plain[0].mxfp4 = false;
  write_bulk_safetensors(pf, plain, f);

  const SafetensorsFile mx(pa), f32(pf);
  const TensorInfo* blocks = mx.find("e.w_blocks");
  const TensorInfo* scales = mx.find("e.w_scales");
  ASSERT_TRUE(blocks && scales);
  EXPECT_EQ(blocks->dtype_name, "U8");
  EXPECT_EQ(scales->dtype_name, "U8");
  EXPECT_EQ(blocks->shape, (std::vector<std::int64_t>{2, 3, 1024, 16}));
  EXPECT_EQ(scales->shape, (std::vector<std::int64_t>{2, 3, 1024}));
  EXPECT_EQ(scales->begin, blocks->end);  // the scales right after the blocks
  const std::int64_t n = 2 * 3 * 32 * 1024, nb = n / 32;
  std::vector<BlockMXFP4> q(static_cast<std::size_t>(nb));
  quantize_row(DType::kMXFP4, static_cast<const float*>(f32.data(*f32.find("e.w"))), q.data(), n);
  std::vector<std::uint8_t> want_blocks(static_cast<std::size_t>(16 * nb)), want_scales(static_cast<std::size_t>(nb));
  mxfp4_to_hf_blocks(q.data(), nb, want_blocks.data(), want_scales.data());
  EXPECT_EQ(std::memcmp(mx.data(*blocks), want_blocks.data(), want_blocks.size()), 0);
  EXPECT_EQ(std::memcmp(mx.data(*scales), want_scales.data(), want_scales.size()), 0);
  double sq = 0;
  std::vector<float> row(static_cast<std::size_t>(n));
  dequantize_row(DType::kMXFP4, q.data(), row.data(), n);
  for (const float v : row) sq += static_cast<double>(v) * v;
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(n)), 0.3, 0.03);  // the std, within MXFP4's error
  const TensorInfo* z = mx.find("z.weight");
  ASSERT_TRUE(z);
  EXPECT_EQ(z->dtype, DType::kBF16);
  const auto* zb = static_cast<const std::uint16_t*>(mx.data(*z));
  const auto* zf = static_cast<const float*>(f32.data(*f32.find("z.weight")));
  for (int i = 0; i < 35; ++i) EXPECT_EQ(zb[i], f32_to_bf16(zf[i])) << i;
}

}  // namespace
}  // namespace plexus

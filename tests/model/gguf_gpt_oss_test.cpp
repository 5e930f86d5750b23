// gpt-oss through GGUF, the whole way: `plexus quantize` writes a gpt-oss checkpoint as llama.cpp's
// converter does (general.architecture gpt-oss; attn_sinks, post_attention_norm, the router with
// its bias as ffn_gate_inp, gate_up_proj de-interleaved into ffn_gate_exps and ffn_up_exps, every
// expert matrix (out, in) and stacked, the expert biases F32; YaRN and the sliding layers as keys),
// and `plexus perplexity` on the file (its experts viewed in place, MXFP4 ones too) scores tokens as
// the checkpoint does. Also: Mixtral files of older converters (one tensor per expert), and gpt-oss
// files whose tensors disagree with their metadata (exit 2 naming the tensor and the numbers).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <list>

#include "core/gguf_file.h"
#include "core/gguf_writer.h"
#include "core/json.h"
#include "kernels/quantize.h"
#include "kernels/ref/dequantize.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/make_model.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::ProcessResult;
using testing::TempDir;
using testing::run_plexus;
using testing::shell_quote;

const char* const kGptOssIds = "1,17,300,5,2047,64,99,31999,3,8,400,12,77,1500,6,250,9,1234,45,600";

std::string make(const TempDir& dir, Arch arch, double std) {
  const std::string out = dir / std::string(arch_name(arch));
  MakeModelOptions o;
  o.arch = arch;
  o.dtype = DType::kF32;
  o.seed = 7;
  o.std = std;
  write_random_model(out, o);
  return out;
}

ProcessResult quantize_gpt_oss(const std::string& src, const std::string& out, const std::string& type) {
  const ProcessResult r = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(out) + " --type " + type);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r;
}

std::vector<double> gpt_oss_nll(const std::string& model, const std::string& extra = "") {
  const ProcessResult r = run_plexus("perplexity " + shell_quote(model) + " --ids " + kGptOssIds + " --json --threads 1" + extra);
  EXPECT_EQ(r.exit_code, 0) << model << extra << "\n" << r.err;
  if (r.exit_code != 0) return {};
  return Json::parse(r.out)["nll"].get<std::vector<double>>();
}

float f32_at(const void* base, std::int64_t i) {
  float x;
  std::memcpy(&x, static_cast<const char*>(base) + i * 4, 4);
  return x;
}

// The F32 file: llama.cpp's keys and layout, element for element where each came from, and the
// checkpoint's per-token NLL, bit for bit (the same f32 weights in the same kernels).
TEST(GgufGptOss, F32FileHasLlamaCppsLayoutAndRunsLikeTheCheckpoint) {
  const TempDir dir("gguf-gpt-oss-f32");
  const std::string src = make(dir, Arch::kGptOss, 0.08);
  const ModelConfig c = load_model_config(src);
  const std::int64_t E = c.moe.num_experts, H = c.hidden_size, Ie = c.moe.expert_intermediate_size;
  const std::string file = dir / "f32.gguf";
  quantize_gpt_oss(src, file, "F32");
  {
    const GgufFile f(file);
    EXPECT_EQ(f.require_string("general.architecture"), "gpt-oss");
    EXPECT_EQ(f.require_int("gpt-oss.expert_count"), E);
    EXPECT_EQ(f.require_int("gpt-oss.expert_used_count"), c.moe.experts_per_token);
    EXPECT_EQ(f.require_int("gpt-oss.expert_feed_forward_length"), Ie);
    EXPECT_EQ(f.require_int("gpt-oss.attention.sliding_window"), c.sliding_window);
    EXPECT_EQ(f.find("gpt-oss.attention.sliding_window_pattern"), nullptr);  // even layers sliding: llama.cpp's default
    EXPECT_EQ(f.require_string("gpt-oss.rope.scaling.type"), "yarn");
    EXPECT_EQ(f.get_float("gpt-oss.rope.scaling.factor"), c.rope_factor);
    EXPECT_EQ(f.require_int("gpt-oss.rope.scaling.original_context_length"), c.rope_original_max_position);
    EXPECT_EQ(f.find("gpt-oss.rope.scaling.attn_factor"), nullptr);  // 0.1·ln(factor) + 1: llama.cpp's own
    const Checkpoint ck(src);
    const std::string l1 = "model.layers.1";
    const auto tensor = [&](const std::string& name, const std::vector<std::int64_t>& ne) {
      const GgufTensor* t = f.find_tensor(name);
      EXPECT_NE(t, nullptr) << name;
      if (!t) return static_cast<const void*>(nullptr);
      EXPECT_EQ(t->dims, ne) << name;
      EXPECT_EQ(t->ggml_type, 0u) << name;
      return t->dims == ne ? f.data(*t) : nullptr;
    };
    const void* sinks = tensor("blk.1.attn_sinks.weight", {c.num_heads});
    const void* gate = tensor("blk.1.ffn_gate_exps.weight", {H, Ie, E});
    const void* up = tensor("blk.1.ffn_up_exps.weight", {H, Ie, E});
    const void* down = tensor("blk.1.ffn_down_exps.weight", {Ie, H, E});
    const void* gate_b = tensor("blk.1.ffn_gate_exps.bias", {Ie, E});
    const void* up_b = tensor("blk.1.ffn_up_exps.bias", {Ie, E});
    const void* down_b = tensor("blk.1.ffn_down_exps.bias", {H, E});
    tensor("blk.1.ffn_gate_inp.weight", {H, E});
    tensor("blk.1.ffn_gate_inp.bias", {E});
    tensor("blk.1.post_attention_norm.weight", {H});
    tensor("blk.1.attn_q.bias", {c.q_dim()});
    tensor("output.weight", {H, c.vocab_size});  // llama.cpp's gpt-oss wants it, tied or not
    ASSERT_TRUE(sinks && gate && up && down && gate_b && up_b && down_b);
    const void* gu = ck.get(l1 + ".mlp.experts.gate_up_proj").data;         // (E, H, 2·Ie)
    const void* dp = ck.get(l1 + ".mlp.experts.down_proj").data;            // (E, Ie, H)
    const void* gub = ck.get(l1 + ".mlp.experts.gate_up_proj_bias").data;   // (E, 2·Ie)
    const void* dpb = ck.get(l1 + ".mlp.experts.down_proj_bias").data;      // (E, H)
    for (std::int64_t h = 0; h < c.num_heads; ++h) EXPECT_EQ(f32_at(sinks, h), f32_at(ck.get(l1 + ".self_attn.sinks").data, h));
    for (std::int64_t e = 0; e < E; ++e) {
      for (std::int64_t i = 0; i < Ie; ++i) {
        for (std::int64_t h = 0; h < H; ++h) {
          ASSERT_EQ(f32_at(gate, (e * Ie + i) * H + h), f32_at(gu, (e * H + h) * 2 * Ie + 2 * i)) << e << " " << i << " " << h;
          ASSERT_EQ(f32_at(up, (e * Ie + i) * H + h), f32_at(gu, (e * H + h) * 2 * Ie + 2 * i + 1)) << e << " " << i << " " << h;
          ASSERT_EQ(f32_at(down, (e * H + h) * Ie + i), f32_at(dp, (e * Ie + i) * H + h)) << e << " " << i << " " << h;
        }
        EXPECT_EQ(f32_at(gate_b, e * Ie + i), f32_at(gub, e * 2 * Ie + 2 * i));
        EXPECT_EQ(f32_at(up_b, e * Ie + i), f32_at(gub, e * 2 * Ie + 2 * i + 1));
      }
      for (std::int64_t h = 0; h < H; ++h) EXPECT_EQ(f32_at(down_b, e * H + h), f32_at(dpb, e * H + h));
    }
  }
  const ModelConfig g = load_model_config(file);
  EXPECT_EQ(g.arch, Arch::kGptOss);
  EXPECT_TRUE(g.moe.split_experts);
  EXPECT_EQ(g.moe.num_experts, E);
  EXPECT_EQ(g.moe.experts_per_token, c.moe.experts_per_token);
  EXPECT_EQ(g.moe.expert_intermediate_size, Ie);
  EXPECT_EQ(g.sliding_window, c.sliding_window);
  EXPECT_EQ(g.sliding_layers, c.sliding_layers);
  EXPECT_EQ(g.rope_scaling, RopeScaling::kYarn);
  EXPECT_EQ(g.rope_factor, c.rope_factor);
  EXPECT_EQ(g.rope_original_max_position, c.rope_original_max_position);
  EXPECT_FALSE(g.rope_truncate);
  EXPECT_DOUBLE_EQ(g.rope_attention_factor, c.rope_attention_factor);
  EXPECT_FALSE(g.rope_interleaved);  // llama.cpp runs gpt-oss's rope NEOX-style: q/k as Hugging Face has them
  EXPECT_TRUE(g.attention_sinks && g.qkv_bias && g.o_bias);
  EXPECT_EQ(g.moe.swiglu_alpha, 1.702);
  EXPECT_EQ(g.moe.swiglu_limit, 7.0);
  const std::vector<double> want = gpt_oss_nll(src);
  const std::vector<double> got = gpt_oss_nll(file);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "token " << i;
  double spread = 0;
  for (double x : want) spread += std::abs(x - want.front());
  EXPECT_GT(spread, 1e-3);  // the model computes something
}

// F16, BF16 and Q8_0 files run as the checkpoint converted on load does (the same weights; the
// router and biases stay F32 in each).
TEST(GgufGptOss, FloatAndQuantisedFilesRunAsTheCheckpointConvertedOnLoad) {
  const TempDir dir("gguf-gpt-oss-types");
  const std::string src = make(dir, Arch::kGptOss, 0.02);
  const std::vector<double> base = gpt_oss_nll(src);
  for (const char* type : {"bf16", "q8_0"}) {
    const std::string file = dir / (std::string(type) + ".gguf");
    quantize_gpt_oss(src, file, type);
    const GgufFile f(file);
    EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_inp.weight")->ggml_type, 0u) << type;
    EXPECT_EQ(f.find_tensor("blk.0.ffn_down_exps.bias")->ggml_type, 0u) << type;
    EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_exps.weight")->ggml_type, std::string(type) == "bf16" ? 30u : 8u) << type;
    const std::vector<double> got = gpt_oss_nll(file);
    ASSERT_EQ(got.size(), base.size()) << type;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - base[i]));
    std::printf("gpt-oss %s file vs f32 checkpoint: max |dNLL| %.6f\n", type, worst);
    EXPECT_GT(worst, 0.0) << type;
    EXPECT_LT(worst, std::string(type) == "bf16" ? 0.02 : 0.06) << type;
  }
}

// layer_types travel as llama.cpp's sliding_window_pattern: a period when one gives them, else one
// bool per layer (with a warning: llama.cpp's gpt-oss reads a period only); both read back.
TEST(GgufGptOss, LayerTypesTravelAsTheSlidingWindowPattern) {
  const TempDir dir("gguf-gpt-oss-swa");
  const std::string src = make(dir, Arch::kGptOss, 0.08);
  const auto types = [](std::initializer_list<bool> sliding) {
    Json t = Json::array();
    for (bool s : sliding) t.push_back(s ? "sliding_attention" : "full_attention");
    return t;
  };
  testing::patch_config(src, Json{{"layer_types", types({true, true, false, true})}});  // period 3
  quantize_gpt_oss(src, dir / "p3.gguf", "f32");
  EXPECT_EQ(GgufFile(dir / "p3.gguf").require_int("gpt-oss.attention.sliding_window_pattern"), 3);
  EXPECT_EQ(load_model_config(dir / "p3.gguf").sliding_layers, (std::vector<bool>{true, true, false, true}));
  testing::patch_config(src, Json{{"layer_types", types({false, true, true, false})}});  // no period
  const ProcessResult r = quantize_gpt_oss(src, dir / "any.gguf", "f32");
  EXPECT_NE(r.err.find("llama.cpp's gpt-oss does not read"), std::string::npos) << r.err;
  EXPECT_EQ(GgufFile(dir / "any.gguf").array_length("gpt-oss.attention.sliding_window_pattern"), 4u);
  EXPECT_EQ(load_model_config(dir / "any.gguf").sliding_layers, (std::vector<bool>{false, true, true, false}));
  const std::vector<double> want = gpt_oss_nll(src);
  EXPECT_EQ(gpt_oss_nll(dir / "any.gguf"), want);
}

// The experts' stacks in MXFP4 run as stored, as the same file with those stacks as f32 holding
// exactly their MXFP4 values does, within the 8-bit activations' error (as GgufMxfp4's bound).
TEST(GgufGptOss, Mxfp4ExpertsRunAsStored) {
  const TempDir dir("gguf-gpt-oss-mxfp4");
  const std::string f32 = dir / "f32.gguf";
  quantize_gpt_oss(make(dir, Arch::kGptOss, 0.08), f32, "f32");
  const GgufFile src(f32);
  GgufWriter mx(32), tw(32);
  for (const auto& [key, value] : src.metadata()) {
    mx.add(key, value);
    tw.add(key, value);
  }
  std::list<std::vector<std::uint8_t>> keep;  // bytes until written
  int converted = 0;
  for (const GgufTensor& t : src.tensors()) {
    const auto* data = static_cast<const std::uint8_t*>(src.data(t));
    auto& f = keep.emplace_back(data, data + t.bytes);
    if (!t.name.ends_with("_exps.weight")) {
      const auto fill = [&f](void* dst) { std::memcpy(dst, f.data(), f.size()); };
      mx.add_tensor(t.name, t.dims, t.ggml_type, t.bytes, fill);
      tw.add_tensor(t.name, t.dims, t.ggml_type, t.bytes, fill);
      continue;
    }
    const std::int64_t cols = t.dims[0], rows = t.numel() / cols, q_row = dtype_row_bytes(DType::kMXFP4, cols);
    auto& q = keep.emplace_back(static_cast<std::size_t>(rows * q_row));
    for (std::int64_t r = 0; r < rows; ++r) {
      float* row = reinterpret_cast<float*>(f.data()) + r * cols;
      quantize_row(DType::kMXFP4, row, q.data() + r * q_row, cols);
      dequantize_row(DType::kMXFP4, q.data() + r * q_row, row, cols);
    }
    mx.add_tensor(t.name, t.dims, ggml_type_of(DType::kMXFP4), q.size(), [&q](void* dst) { std::memcpy(dst, q.data(), q.size()); });
    tw.add_tensor(t.name, t.dims, 0, f.size(), [&f](void* dst) { std::memcpy(dst, f.data(), f.size()); });
    ++converted;
  }
  mx.write(dir / "mxfp4.gguf");
  tw.write(dir / "twin.gguf");
  EXPECT_EQ(converted, 3 * load_model_config(f32).num_layers);
  const Checkpoint ck(dir / "mxfp4.gguf");
  EXPECT_EQ(ck.get("model.layers.0.mlp.experts.3.down_proj.weight").info->dtype, DType::kMXFP4);
  const std::vector<double> got = gpt_oss_nll(dir / "mxfp4.gguf"), want = gpt_oss_nll(dir / "twin.gguf");
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  std::printf("gpt-oss MXFP4 experts vs their f32 twin: max |dNLL| %.2e\n", worst);
  EXPECT_LE(worst, 0.12);
  EXPECT_NE(got, gpt_oss_nll(f32));  // the MXFP4 values are not the f32 ones: the twin matters
}

// FROM rewritten as TO with every tensor passed to EDIT, which may replace it by others (name,
// ne, ggml type, bytes); metadata key KEY (when given) set to VALUE.
struct Piece {
  std::string name;
  std::vector<std::int64_t> dims;
  std::uint32_t type;
  const void* data;
  std::uint64_t bytes;
};
void rewrite_tensors(const std::string& from, const std::string& to, const std::function<std::vector<Piece>(const GgufFile&, const GgufTensor&)>& edit,
             const std::string& key = "", std::int64_t value = 0) {
  const GgufFile f(from);
  GgufWriter w;
  for (const auto& [k, v] : f.metadata()) w.add(k, k == key ? gguf_u32(static_cast<std::uint32_t>(value)) : v);
  for (const GgufTensor& t : f.tensors()) {
    for (const Piece& p : edit(f, t)) {
      w.add_tensor(p.name, p.dims, p.type, p.bytes, [p](void* dst) { std::memcpy(dst, p.data, p.bytes); });
    }
  }
  w.write(to);
}
std::vector<Piece> same(const GgufFile& f, const GgufTensor& t) { return {{t.name, t.dims, t.ggml_type, f.data(t), t.bytes}}; }

// Older converters wrote Mixtral's experts one tensor each, blk.N.ffn_{gate,up,down}.E.weight:
// such a file (each expert viewed in place) scores as the stacked one, F32 and Q8_0 alike.
TEST(GgufLegacyMixtral, PerExpertTensorsRunAsTheStackedLayout) {
  const TempDir dir("gguf-mixtral-legacy");
  const std::string src = make(dir, Arch::kMixtral, 0.08);
  for (const char* type : {"f32", "q8_0"}) {
    const std::string stacked = dir / (std::string(type) + ".gguf"), legacy = dir / (std::string(type) + "-legacy.gguf");
    quantize_gpt_oss(src, stacked, type);
    rewrite_tensors(stacked, legacy, [](const GgufFile& f, const GgufTensor& t) {
      const std::size_t at = t.name.find("_exps.weight");
      if (at == std::string::npos) return same(f, t);
      std::vector<Piece> out;
      const std::int64_t E = t.dims[2];
      const std::uint64_t each = t.bytes / static_cast<std::uint64_t>(E);
      for (std::int64_t e = 0; e < E; ++e) {
        out.push_back({t.name.substr(0, at) + "." + std::to_string(e) + ".weight", {t.dims[0], t.dims[1]}, t.ggml_type,
                       static_cast<const char*>(f.data(t)) + e * each, each});
      }
      return out;
    });
    {
      const GgufFile f(legacy);
      EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_exps.weight"), nullptr);
      ASSERT_NE(f.find_tensor("blk.0.ffn_down.3.weight"), nullptr);
    }
    const std::vector<double> want = gpt_oss_nll(stacked);
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(gpt_oss_nll(legacy), want) << type;
  }
}

// YaRN in any architecture's file: type, factor, original context, betas, and an attention factor
// other than 0.1·ln(factor) + 1 as llama.cpp's attn_factor (divided by that); read back to the
// same rope (the factor through an f32 key: within 1e-5 per token).
TEST(GgufYarn, RopeScalingTravelsAsLlamaCppsKeys) {
  const TempDir dir("gguf-yarn");
  const std::string src = make(dir, Arch::kQwen3, 0.08);
  testing::patch_config(src, Json{{"rope_scaling", Json{{"rope_type", "yarn"}, {"factor", 4.0}, {"beta_fast", 16.0},
                                                           {"original_max_position_embeddings", 8}, {"attention_factor", 1.3}}}});
  const std::string file = dir / "yarn.gguf";
  const ProcessResult r = quantize_gpt_oss(src, file, "f32");
  EXPECT_NE(r.err.find("llama.cpp ignores the rope.scaling.yarn_beta_* keys"), std::string::npos) << r.err;
  const GgufFile f(file);
  EXPECT_EQ(f.require_string("qwen3.rope.scaling.type"), "yarn");
  EXPECT_EQ(f.require_int("qwen3.rope.scaling.original_context_length"), 8);
  EXPECT_NEAR(*f.get_float("qwen3.rope.scaling.attn_factor"), 1.3 / (0.1 * std::log(4.0) + 1), 1e-7);
  const ModelConfig c = load_model_config(src), g = load_model_config(file);
  EXPECT_EQ(g.rope_scaling, RopeScaling::kYarn);
  EXPECT_EQ(g.rope_factor, 4.0);
  EXPECT_EQ(g.rope_beta_fast, 16.0);
  EXPECT_EQ(g.rope_beta_slow, 1.0);
  EXPECT_TRUE(g.rope_truncate);
  EXPECT_NEAR(g.rope_attention_factor, c.rope_attention_factor, 1e-6);
  const std::vector<double> want = gpt_oss_nll(src), got = gpt_oss_nll(file);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "token " << i;
  testing::patch_config(src, Json{{"rope_scaling", Json{{"rope_type", "yarn"}, {"factor", 4.0}, {"truncate", false}}}});
  const ProcessResult refused = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(dir / "t.gguf") + " --type f32");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("rope_scaling.truncate false cannot be written to GGUF"), std::string::npos) << refused.err;
}

// A gpt-oss file whose tensors disagree with its metadata exits 2 naming the tensor, its ne, what
// the metadata gives and the keys it comes from.
TEST(GgufGptOssBadInput, TensorsThatDisagreeWithTheMetadataExitTwoNamingThem) {
  const TempDir dir("gguf-gpt-oss-bad");
  const std::string good = dir / "good.gguf";
  quantize_gpt_oss(make(dir, Arch::kGptOss, 0.02), good, "f32");
  const ModelConfig c = load_model_config(good);
  const std::string H = std::to_string(c.hidden_size), Ie = std::to_string(c.moe.expert_intermediate_size);
  const std::string E = std::to_string(c.moe.num_experts), heads = std::to_string(c.num_heads);
  const auto expect_exit2 = [&](const std::string& bad, const std::string& mention) {
    for (const std::string& cmd : {"perplexity " + shell_quote(bad) + " --ids 1,2,3", "plan " + shell_quote(bad)}) {
      const ProcessResult r = run_plexus(cmd);
      EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find(mention), std::string::npos) << cmd << ": " << r.err;
    }
  };
  rewrite_tensors(good, dir / "width.gguf", same, "gpt-oss.expert_feed_forward_length", c.moe.expert_intermediate_size / 2);
  expect_exit2(dir / "width.gguf", "tensor 'blk.0.ffn_gate_exps.weight' has ne [" + H + ", " + Ie + ", " + E +
                                       "] but the metadata gives [" + H + ", " + std::to_string(c.moe.expert_intermediate_size / 2) +
                                       ", " + E + "] (gpt-oss.embedding_length " + H + ", gpt-oss.expert_feed_forward_length " +
                                       std::to_string(c.moe.expert_intermediate_size / 2) + ", gpt-oss.expert_count " + E + ")");
  const auto shorter = [](const std::string& name) {
    return [name](const GgufFile& f, const GgufTensor& t) {
      std::vector<Piece> p = same(f, t);
      if (t.name == name) {
        p[0].bytes = p[0].bytes / static_cast<std::uint64_t>(t.dims[0]) * static_cast<std::uint64_t>(t.dims[0] - 1);
        --p[0].dims[0];
      }
      return p;
    };
  };
  rewrite_tensors(good, dir / "sinks.gguf", shorter("blk.2.attn_sinks.weight"));
  expect_exit2(dir / "sinks.gguf", "tensor 'blk.2.attn_sinks.weight' has ne [" + std::to_string(c.num_heads - 1) +
                                       "] but the metadata gives [" + heads + "] (gpt-oss.attention.head_count " + heads + ")");
  rewrite_tensors(good, dir / "bias.gguf", shorter("blk.1.ffn_down_exps.bias"));
  expect_exit2(dir / "bias.gguf", "tensor 'blk.1.ffn_down_exps.bias' has ne [" + std::to_string(c.hidden_size - 1) + ", " + E +
                                      "] but the metadata gives [" + H + ", " + E + "] (gpt-oss.embedding_length " + H +
                                      ", gpt-oss.expert_count " + E + ")");
  // Splitting a GGUF gpt-oss over ranks is not built: refused, never a wrong split.
  for (const char* flag : {"--tp 2", "--ep 2"}) {
    const ProcessResult r = run_plexus("perplexity " + shell_quote(good) + " --ids 1,2,3 " + flag);
    EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.err;
    EXPECT_NE(r.err.find("gpt-oss read from GGUF"), std::string::npos) << flag << ": " << r.err;
  }
}

}  // namespace
}  // namespace plexus

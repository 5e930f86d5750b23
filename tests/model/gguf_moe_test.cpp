// Mixture-of-experts models through GGUF, the whole way: `plexus quantize` writes Mixtral and
// Qwen3-MoE checkpoints with llama.cpp's names (router ffn_gate_inp kept F32, the experts stacked
// as ffn_{gate,up,down}_exps), and `plexus perplexity` on the file scores tokens as the checkpoint
// does (F32), as the checkpoint quantised on load does (Q8_0, Q4_K_M); a file whose stacks or
// counts disagree with its metadata exits 2 naming the tensor or key and the numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/gguf_file.h"
#include "core/gguf_writer.h"
#include "core/json.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/make_model.h"
#include "model/module_tree.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::ProcessResult;
using testing::TempDir;
using testing::run_plexus;
using testing::shell_quote;

const char* const kIds = "1,17,300,5,2047,64,99,31999,3,8,400,12,77,1500,6,250";

std::string make_moe(const TempDir& dir, Arch arch, double std) {
  const std::string out = dir / std::string(arch_name(arch));
  MakeModelOptions o;
  o.arch = arch;
  o.dtype = DType::kF32;
  o.seed = 5;
  o.std = std;
  write_random_model(out, o);
  return out;
}

std::string quantize_moe(const std::string& src, const std::string& out, const std::string& type) {
  const ProcessResult r = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(out) + " --type " + type);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

std::vector<double> moe_nll(const std::string& model, const std::string& extra = "") {
  const ProcessResult r = run_plexus("perplexity " + shell_quote(model) + " --ids " + kIds + " --json --threads 1" + extra);
  EXPECT_EQ(r.exit_code, 0) << model << extra << "\n" << r.err;
  if (r.exit_code != 0) return {};
  return Json::parse(r.out)["nll"].get<std::vector<double>>();
}

// Mixtral's GGUF is llama's: q/k rows permuted for interleaved-pair rope, the same q·k summed in
// another order (as for dense llama files), so within 1e-5; Qwen3-MoE's runs bit for bit.
void expect_same_nll(const std::vector<double>& a, const std::vector<double>& b, Arch arch, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_FALSE(a.empty()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (arch == Arch::kQwen3Moe) {
      EXPECT_EQ(a[i], b[i]) << what << " token " << i;
    } else {
      EXPECT_NEAR(a[i], b[i], 1e-5) << what << " token " << i;
    }
  }
}

class GgufMoe : public ::testing::TestWithParam<Arch> {};

// The F32 file: llama.cpp's keys and tensor layout (expert e's matrix is the e-th slice of its
// stack, byte for byte), and the same per-token NLL as the safetensors checkpoint.
TEST_P(GgufMoe, F32FileHoldsTheExpertsStackedAndRunsLikeTheCheckpoint) {
  const Arch arch = GetParam();
  const TempDir dir("gguf-moe-f32");
  const std::string src = make_moe(dir, arch, 0.08);
  const ModelConfig c = load_model_config(src);
  const std::int64_t E = c.moe.num_experts, H = c.hidden_size, Ie = c.moe.expert_intermediate_size;
  const std::string file = quantize_moe(src, dir / "f32.gguf", "F32");
  {
    const GgufFile f(file);
    const std::string a = arch == Arch::kMixtral ? "llama" : "qwen3moe";
    EXPECT_EQ(f.require_string("general.architecture"), a);
    EXPECT_EQ(f.require_int("general.file_type"), 0);
    EXPECT_EQ(f.require_int(a + ".expert_count"), E);
    EXPECT_EQ(f.require_int(a + ".expert_used_count"), c.moe.experts_per_token);
    if (arch == Arch::kQwen3Moe) {
      EXPECT_EQ(f.require_int(a + ".expert_feed_forward_length"), Ie);
    }
    const Checkpoint ck(src);
    const MoeNames n = moe_names(arch);
    const GgufTensor* router = f.find_tensor("blk.0.ffn_gate_inp.weight");
    ASSERT_NE(router, nullptr);
    EXPECT_EQ(router->dims, (std::vector<std::int64_t>{H, E}));
    EXPECT_EQ(router->ggml_type, 0u);
    for (const auto& [stack, part] : {std::pair<const char*, const char*>{"ffn_gate_exps", n.gate}, {"ffn_up_exps", n.up},
                                      {"ffn_down_exps", n.down}}) {
      const GgufTensor* t = f.find_tensor(std::string("blk.0.") + stack + ".weight");
      ASSERT_NE(t, nullptr) << stack;
      const bool down = std::string(stack) == "ffn_down_exps";
      EXPECT_EQ(t->dims, down ? (std::vector<std::int64_t>{Ie, H, E}) : (std::vector<std::int64_t>{H, Ie, E})) << stack;
      ASSERT_EQ(t->ggml_type, 0u) << stack;
      for (std::int64_t e = 0; e < E; ++e) {
        const TensorRef r = ck.get("model.layers.0" + std::string(n.experts) + std::to_string(e) + "." + part + ".weight");
        const std::size_t bytes = static_cast<std::size_t>(H * Ie * 4);
        EXPECT_EQ(std::memcmp(static_cast<const char*>(f.data(*t)) + e * bytes, r.data, bytes), 0) << stack << " expert " << e;
      }
    }
    // Qwen3-MoE's layer 1 keeps a dense MLP: ffn_gate/up/down without a router.
    EXPECT_EQ(f.find_tensor("blk.1.ffn_gate_inp.weight") != nullptr, arch == Arch::kMixtral);
    EXPECT_EQ(f.find_tensor("blk.1.ffn_gate.weight") != nullptr, arch == Arch::kQwen3Moe);
  }
  const ModelConfig g = load_model_config(file);
  EXPECT_EQ(g.arch, arch);
  EXPECT_EQ(g.moe.num_experts, E);
  EXPECT_EQ(g.moe.expert_intermediate_size, Ie);
  EXPECT_EQ(g.moe.mlp_only_layers, c.moe.mlp_only_layers);
  const std::vector<double> want = moe_nll(src);
  expect_same_nll(moe_nll(file), want, arch, "F32 file");
  double spread = 0;
  for (double x : want) spread += std::abs(x - want.front());
  EXPECT_GT(spread, 1e-3);  // the model computes something
}

// Q8_0 and Q4_K_M files: the router stays F32, the experts take the mix's types, and the file
// runs as the checkpoint quantised on load (the same weights), close to the F32 model (within the
// bounds QuantizeOnLoad.PerplexityStaysCloseToTheUnquantisedModel uses; measured here: q8_0
// mean |dNLL| ≤ 0.0024, max 0.006; q4_k_m ≤ 0.012, 0.033).
TEST_P(GgufMoe, QuantisedFilesRunAsQuantiseOnLoad) {
  const Arch arch = GetParam();
  const TempDir dir("gguf-moe-quant");
  const std::string src = make_moe(dir, arch, 0.02);
  const std::vector<double> base = moe_nll(src);
  struct Case {
    const char* type;
    double mean_bound, max_bound;
  };
  for (const Case q : {Case{"q8_0", 0.02, 0.06}, Case{"q4_k_m", 0.17, 0.6}}) {
    const std::string file = quantize_moe(src, dir / (std::string(q.type) + ".gguf"), q.type);
    const GgufFile f(file);
    EXPECT_EQ(f.find_tensor("blk.0.ffn_gate_inp.weight")->ggml_type, 0u) << q.type;
    const GgufTensor* gate = f.find_tensor("blk.0.ffn_gate_exps.weight");
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate->ggml_type, std::string(q.type) == "q8_0" ? 8u : 6u) << q.type << " (Q4_K falls back to Q5_0 on rows of 64)";
    const std::vector<double> got = moe_nll(file);
    expect_same_nll(got, moe_nll(src, std::string(" --quantize ") + q.type), arch, q.type);
    ASSERT_EQ(got.size(), base.size());
    double sum = 0, worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      sum += std::fabs(got[i] - base[i]);
      worst = std::max(worst, std::fabs(got[i] - base[i]));
    }
    std::printf("%s %s: mean |dNLL| %.6f, max %.6f\n", std::string(arch_name(arch)).c_str(), q.type, sum / got.size(), worst);
    EXPECT_GT(worst, 0.0) << q.type;
    EXPECT_LT(sum / got.size(), q.mean_bound) << q.type;
    EXPECT_LT(worst, q.max_bound) << q.type;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, GgufMoe, ::testing::Values(Arch::kMixtral, Arch::kQwen3Moe),
                         [](const auto& info) { return info.param == Arch::kMixtral ? "Mixtral" : "Qwen3Moe"; });

// A Qwen3-MoE whose top-k is not renormalised (norm_topk_prob false) carries that as
// qwen3moe.expert_weights_norm false (llama.cpp renormalises qwen3moe regardless: a warning says
// so) and runs from the file as from the checkpoint.
TEST(GgufMoeNormTopK, NotRenormalisedTravelsAsExpertWeightsNorm) {
  const TempDir dir("gguf-moe-norm");
  const std::string src = make_moe(dir, Arch::kQwen3Moe, 0.08);
  testing::patch_config(src, Json{{"norm_topk_prob", false}});
  const ProcessResult r = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(dir / "f32.gguf") + " --type f32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("llama.cpp renormalises qwen3moe's top-k expert weights regardless"), std::string::npos) << r.err;
  EXPECT_EQ(GgufFile(dir / "f32.gguf").get_bool("qwen3moe.expert_weights_norm"), false);
  EXPECT_FALSE(load_model_config(dir / "f32.gguf").moe.normalize_top_k);
  const std::vector<double> want = moe_nll(src);
  expect_same_nll(moe_nll(dir / "f32.gguf"), want, Arch::kQwen3Moe, "norm_topk_prob false");
  testing::patch_config(src, Json{{"norm_topk_prob", true}});
  const std::vector<double> renormalised = moe_nll(src);
  ASSERT_EQ(renormalised.size(), want.size());
  EXPECT_NE(renormalised, want);  // the flag matters for this model
}

// A checkpoint that lacks experts config.json implies is refused before anything is written.
TEST(GgufMoeBadInput, ACheckpointWithoutItsExpertsExitsTwo) {
  const TempDir dir("gguf-moe-lacks");
  const std::string src = make_moe(dir, Arch::kQwen3Moe, 0.02);
  testing::patch_config(src, Json{{"mlp_only_layers", Json::array()}});  // layer 1 holds a dense MLP, no experts
  const ProcessResult r = run_plexus("quantize " + shell_quote(src) + " " + shell_quote(dir / "x.gguf"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("lacks tensor 'model.layers.1.mlp.gate.weight'"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.gguf"));
}

// FROM rewritten as TO: metadata key KEY (when given) set to VALUE, and tensor SHRINK's last
// dimension (its experts) one smaller, its last expert dropped.
void rewrite_key(const std::string& from, const std::string& to, const std::string& key, std::int64_t value, const std::string& shrink) {
  const GgufFile f(from);
  GgufWriter w;
  for (const auto& [k, v] : f.metadata()) w.add(k, k == key ? gguf_u32(static_cast<std::uint32_t>(value)) : v);
  for (const GgufTensor& t : f.tensors()) {
    std::vector<std::int64_t> dims = t.dims;
    std::uint64_t bytes = t.bytes;
    if (t.name == shrink) {
      bytes = bytes / static_cast<std::uint64_t>(dims.back()) * static_cast<std::uint64_t>(dims.back() - 1);
      --dims.back();
    }
    const void* data = f.data(t);
    w.add_tensor(t.name, dims, t.ggml_type, bytes, [data, bytes](void* dst) { std::memcpy(dst, data, bytes); });
  }
  w.write(to);
}

TEST(GgufMoeBadInput, StacksAndCountsThatDisagreeExitTwoNamingThem) {
  const TempDir dir("gguf-moe-bad");
  const std::string file = quantize_moe(make_moe(dir, Arch::kQwen3Moe, 0.02), dir / "good.gguf", "q8_0");
  const auto expect_exit2 = [&](const std::string& bad, const std::string& mention) {
    for (const std::string& cmd : {"perplexity " + shell_quote(bad) + " --ids 1,2,3", "plan " + shell_quote(bad)}) {
      const ProcessResult r = run_plexus(cmd);
      EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find(mention), std::string::npos) << cmd << ": " << r.err;
    }
  };
  rewrite_key(file, dir / "fewer.gguf", "", 0, "blk.0.ffn_gate_exps.weight");
  const ProcessResult r = run_plexus("perplexity " + shell_quote(dir / "fewer.gguf") + " --ids 1,2,3");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("tensor 'blk.0.ffn_gate_exps.weight' holds 7 experts (ne [64, 44, 7]) but qwen3moe.expert_count 8"),
            std::string::npos)
      << r.err;
  rewrite_key(file, dir / "used.gguf", "qwen3moe.expert_used_count", 9, "");
  expect_exit2(dir / "used.gguf", "qwen3moe.expert_used_count (9) is more than qwen3moe.expert_count (8)");
  rewrite_key(file, dir / "none.gguf", "qwen3moe.expert_count", 0, "");
  expect_exit2(dir / "none.gguf", "qwen3moe.expert_count is 0");
}

}  // namespace
}  // namespace plexus

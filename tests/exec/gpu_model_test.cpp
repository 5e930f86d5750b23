// Whole models on a GPU (ctest label gpu; skipped, with the reason, where CUDA sees no GPU):
// the golden-logits checkpoints through the run path `generate --devices 0` takes, against the
// CPU engine — per-token NLL within 2e-2 (bf16) or 1e-3 (f32), greedy tokens equal while the
// CPU's top-2 logit gap exceeds 0.05 — and 2 and 4 virtual GPUs, micro-batches and cpu and disk offload
// against one GPU; the quantised GGUF files (block-format kernels) against the CPU; tensor
// parallelism over 2 virtual GPUs (with and without 2 pipeline stages) against one GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <utility>

#include "backend/cuda_availability.h"
#include "core/json.h"
#include "exec/model_run.h"
#include "model/config.h"
#include "model/make_model.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

struct GoldenCase {
  std::string name, dtype;
  Json make;
  std::vector<std::int32_t> ids;
};

std::vector<GoldenCase> golden_cases() {
  std::ifstream in(std::string(PLEXUS_GOLDEN_DIR) + "/logits/cases.jsonl");
  std::vector<GoldenCase> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    out.push_back({c["name"].get<std::string>(), c["make"]["dtype"].get<std::string>(), c["make"],
                   c["ids"].get<std::vector<std::int32_t>>()});
  }
  return out;
}

void make_checkpoint(const Json& m, const std::string& dir) {
  // The run's library path (a packed set of libraries on a GPU machine) is not Python's.
  const std::string cmd = "env -u LD_LIBRARY_PATH python3 " + testing::shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/tools/mkmodel.py") + " " +
                          testing::shell_quote(dir) + " --preset " + m["preset"].get<std::string>() + " --arch " +
                          m["arch"].get<std::string>() + " --dtype " + m["dtype"].get<std::string>() + " --seed " +
                          std::to_string(m["seed"].get<int>()) + " --std " + std::to_string(m["std"].get<double>()) +
                          " --vocab " + std::to_string(m["vocab"].get<int>()) + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "mkmodel.py failed (needs python3 with numpy): " << cmd;
}

// A run on GPU devices, as the command line would make it.
std::unique_ptr<ModelRun> gpu_run(const std::string& dir, const PlanInputs& plan, int micro_batches = 0) {
  RunInputs in;
  in.engine.max_batch_tokens = 64;
  in.plan = plan;
  in.plan.context = 256;
  in.micro_batches = micro_batches;
  return open_model_run(in, dir);
}

PlanInputs one_gpu() {
  PlanInputs p;
  p.devices = std::vector<long long>{0};
  return p;
}

// The CPU's top-2 logit gap after `prefix`.
double cpu_top2_gap(Engine& engine, std::span<const std::int32_t> prefix) {
  KvCache cache = engine.new_cache(static_cast<std::int64_t>(prefix.size()) + 1);
  std::vector<float> logits(static_cast<std::size_t>(engine.vocab_size()));
  engine.prefill(cache, prefix, 0, logits.data());
  std::partial_sort(logits.begin(), logits.begin() + 2, logits.end(), std::greater<float>());
  return static_cast<double>(logits[0]) - static_cast<double>(logits[1]);
}

class GpuModel : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaAvailability cuda = probe_cuda(CudaFreeMemory::kNone);
    if (!cuda.usable()) GTEST_SKIP() << "no GPU for CUDA: " << cuda.status();
  }
};

TEST_F(GpuModel, GoldenCheckpointsMatchTheCpuEngine) {
  const std::vector<GoldenCase> cases = golden_cases();
  ASSERT_GE(cases.size(), 3u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.name);
    testing::TempDir dir("gpu_golden");
    make_checkpoint(c.make, dir.path());
    Engine cpu(dir.path(), EngineOptions{});
    const PerplexityResult want = perplexity(cpu, c.ids);
    const std::unique_ptr<ModelRun> run = gpu_run(dir.path(), one_gpu());
    ASSERT_NE(run->executor, nullptr);
    const PerplexityResult got = perplexity(*run->runner, c.ids);
    const double tol = c.dtype == "float32" || c.dtype == "f32" ? 1e-3 : 2e-2;
    ASSERT_EQ(got.nll.size(), want.nll.size());
    for (std::size_t i = 0; i < want.nll.size(); ++i) EXPECT_NEAR(got.nll[i], want.nll[i], tol) << "token " << i;

    GenerateOptions g;
    g.max_tokens = 8;
    const std::span<const std::int32_t> prompt = std::span(c.ids).first(std::min<std::size_t>(c.ids.size(), 12));
    const GenerateResult cg = generate(cpu, prompt, g);
    const GenerateResult gg = generate(*run->runner, prompt, g);
    std::vector<std::int32_t> prefix(prompt.begin(), prompt.end());
    for (std::size_t i = 0; i < cg.ids.size() && i < gg.ids.size(); ++i) {
      if (cg.ids[i] != gg.ids[i]) {
        // A different greedy token is allowed only where the CPU's top two were near-equal.
        EXPECT_LE(cpu_top2_gap(cpu, prefix), 0.05) << "greedy token " << i << ": cpu " << cg.ids[i] << ", gpu " << gg.ids[i];
        break;
      }
      prefix.push_back(cg.ids[i]);
    }
  }
}

// The GGUF files llama.cpp quantised, listed in DIR/cases.jsonl, on one GPU against the exact
// float64 NLLs of their dequantised weights (dequant_f64_nll) and the CPU engine on the same file.
// The GPU multiplies f32 activations by the dequantised weights (prefill through cuBLAS with both
// rounded to f16), so its NLLs stay within 1e-2 per token and 2e-3 on average of the exact ones;
// the CPU quantises activations to 8 bits per block (about 0.012-0.024 mean), so greedy decoding
// (the block GEMV, CUDA graphs) gives the CPU's tokens while the CPU's top-2 logit gap exceeds
// 0.25. *files: the number of files.
void expect_gguf_cases_match_the_cpu_engine(const std::string& dir, int* files) {
  std::ifstream in(dir + "cases.jsonl");
  std::string line;
  *files = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    const std::string path = dir + c["file"].get<std::string>();
    SCOPED_TRACE(path);
    ++*files;
    const std::vector<std::int32_t> ids = c["ids"].get<std::vector<std::int32_t>>();
    Engine cpu(path, EngineOptions{});
    const PerplexityResult want = perplexity(cpu, ids);
    const std::unique_ptr<ModelRun> run = gpu_run(path, one_gpu());
    ASSERT_NE(run->executor, nullptr);
    const PerplexityResult got = perplexity(*run->runner, ids);
    const std::vector<double> exact = c["dequant_f64_nll"].get<std::vector<double>>();
    ASSERT_EQ(got.nll.size(), want.nll.size());
    ASSERT_EQ(got.nll.size(), exact.size());
    double sum = 0, worst = 0;
    for (std::size_t i = 0; i < exact.size(); ++i) {
      const double d = std::fabs(got.nll[i] - exact[i]);
      EXPECT_LE(d, 1e-2) << "token " << i;
      sum += d;
      worst = std::max(worst, d);
    }
    const double mean = sum / static_cast<double>(want.nll.size());
    std::printf("%s on the GPU: mean |dNLL| %.2e, max %.2e against the exact float64 NLLs\n", c["file"].get<std::string>().c_str(), mean,
                worst);
    EXPECT_LE(mean, 2e-3);

    GenerateOptions g;
    g.max_tokens = 8;
    const std::span<const std::int32_t> prompt = std::span(ids).first(12);
    const GenerateResult cg = generate(cpu, prompt, g);
    const GenerateResult gg = generate(*run->runner, prompt, g);
    std::vector<std::int32_t> prefix(prompt.begin(), prompt.end());
    for (std::size_t i = 0; i < cg.ids.size() && i < gg.ids.size(); ++i) {
      if (cg.ids[i] != gg.ids[i]) {
        EXPECT_LE(cpu_top2_gap(cpu, prefix), 0.25) << "greedy token " << i << ": cpu " << cg.ids[i] << ", gpu " << gg.ids[i];
        break;
      }
      prefix.push_back(cg.ids[i]);
    }
  }
}

// tests/data/gguf: Q8_0, Q4_0, and Q4_K_M (Q4_K with some Q6_K tensors; llama's interleaved rope).
TEST_F(GpuModel, QuantisedGgufFilesMatchTheCpuEngine) {
  int files = 0;
  expect_gguf_cases_match_the_cpu_engine(std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf/", &files);
  EXPECT_EQ(files, 3);
}

// tests/data/gguf/mixes: llama.cpp's named mixes (Q5_K_M, Q3_K_M, Q2_K, IQ4_XS on rows of 256;
// Q4_K_M, Q5_K_M, Q3_K_M, IQ4_XS, Q4_1 on rows of 576, with llama.cpp's Q5_0 / Q5_1 / IQ4_NL /
// Q8_0 fallbacks): every block format through the GEMV, the cuBLAS path and the embedding gather.
TEST_F(GpuModel, LlamaCppMixesMatchTheCpuEngine) {
  int files = 0;
  expect_gguf_cases_match_the_cpu_engine(std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf/mixes/", &files);
  EXPECT_EQ(files, 9);
}

TEST_F(GpuModel, VirtualGpusMicroBatchesAndOffloadGiveOneGpusNll) {
  const GoldenCase c = golden_cases().front();
  testing::TempDir dir("gpu_split");
  make_checkpoint(c.make, dir.path());
  const PerplexityResult one = perplexity(*gpu_run(dir.path(), one_gpu())->runner, c.ids);
  const int n_layers = load_model_config(dir.path()).num_layers;
  for (int n : {2, 4}) {
    SCOPED_TRACE("virtual GPUs " + std::to_string(n));
    // The layers spread over the n virtual GPUs in order, the embedding on the first, the head on the last.
    Json map = Json::object();
    map["model.embed_tokens"] = 0;
    for (int l = 0; l < n_layers; ++l) map["model.layers." + std::to_string(l)] = l * n / n_layers;
    map["model.norm"] = n - 1;
    map["lm_head"] = n - 1;
    const std::string map_file = dir.path() + "/split_map.json";
    std::ofstream(map_file) << map.dump();
    PlanInputs p;
    p.virtual_gpus = n;
    p.device_map_file = map_file;
    const std::unique_ptr<ModelRun> run = gpu_run(dir.path(), p, 1);
    ASSERT_EQ(run->executor->layout().stages.size(), static_cast<std::size_t>(n)) << run->plan_text;
    const PerplexityResult r = perplexity(*run->runner, c.ids);
    // One micro-batch: the same kernels on the same token counts, so the same bits.
    EXPECT_EQ(r.nll, one.nll);
    // Pipelined micro-batches change the tokens per kernel (GEMV vs GEMM): equal within rounding.
    const PerplexityResult m = perplexity(*gpu_run(dir.path(), p, n)->runner, c.ids);
    ASSERT_EQ(m.nll.size(), one.nll.size());
    for (std::size_t i = 0; i < one.nll.size(); ++i) EXPECT_NEAR(m.nll[i], one.nll[i], 2e-3) << "token " << i;
    // Greedy decoding across the stages (one token per step) agrees with one GPU.
    GenerateOptions g;
    g.max_tokens = 6;
    const std::span<const std::int32_t> prompt = std::span(c.ids).first(8);
    EXPECT_EQ(generate(*run->runner, prompt, g).ids, generate(*gpu_run(dir.path(), one_gpu())->runner, prompt, g).ids);
  }
  {
    SCOPED_TRACE("cpu and disk offload");
    // Offloaded layers stream to the GPU for each forward.
    Json map = Json::object();
    map["model.embed_tokens"] = 0;
    // Layers by thirds: on the GPU, in host memory ("cpu"), in the mmapped checkpoint ("disk").
    for (int l = 0; l < n_layers; ++l) {
      map["model.layers." + std::to_string(l)] = l % 3 == 0 ? Json(0) : l % 3 == 1 ? Json("cpu") : Json("disk");
    }
    map["model.norm"] = 0;
    map["lm_head"] = 0;
    const std::string map_file = dir.path() + "/offload_map.json";
    std::ofstream(map_file) << map.dump();
    PlanInputs p;
    p.device_map_file = map_file;
    p.offload_disk = true;
    const std::unique_ptr<ModelRun> run = gpu_run(dir.path(), p);
    ASSERT_TRUE(run->executor->layout().streams()) << run->plan_text;
    const PerplexityResult r = perplexity(*run->runner, c.ids);
    ASSERT_EQ(r.nll.size(), one.nll.size());
    // The same kernels on the same tokens, weights from another place: the same bits.
    EXPECT_EQ(r.nll, one.nll);
  }
}

// Tensor parallelism over virtual GPUs on GPU 0 (the CUDA in-process all-reduce: NCCL refuses two
// ranks on one GPU): --tp 2, and --tp 2 --pp 2, give one GPU's per-token NLL within 1e-4 on the
// f32 checkpoint and its greedy tokens, and the same bits from run to run.
TEST_F(GpuModel, TensorParallelOverVirtualGpusGivesOneGpusNll) {
  GoldenCase c;
  for (const GoldenCase& g : golden_cases())
    if (g.dtype == "f32" || g.dtype == "float32") c = g;
  ASSERT_FALSE(c.name.empty()) << "no f32 golden case";
  testing::TempDir dir("gpu_tp");
  make_checkpoint(c.make, dir.path());
  const std::unique_ptr<ModelRun> single = gpu_run(dir.path(), one_gpu());
  const PerplexityResult one = perplexity(*single->runner, c.ids);
  GenerateOptions g;
  g.max_tokens = 6;
  const std::span<const std::int32_t> prompt = std::span(c.ids).first(8);
  const std::vector<std::int32_t> one_ids = generate(*single->runner, prompt, g).ids;
  for (const auto& [tp, pp] : {std::pair{2, 1}, std::pair{2, 2}}) {
    SCOPED_TRACE("--tp " + std::to_string(tp) + " --pp " + std::to_string(pp));
    PlanInputs p;
    p.virtual_gpus = tp * pp;
    p.tensor_parallel = tp;
    p.pipeline_parallel = pp;
    const std::unique_ptr<ModelRun> run = gpu_run(dir.path(), p);
    ASSERT_NE(run->tensor, nullptr) << run->plan_text;
    EXPECT_NE(run->plan_text.find("cuda in-process"), std::string::npos) << run->plan_text;
    const PerplexityResult r = perplexity(*run->runner, c.ids);
    ASSERT_EQ(r.nll.size(), one.nll.size());
    for (std::size_t i = 0; i < one.nll.size(); ++i) EXPECT_NEAR(r.nll[i], one.nll[i], 1e-4) << "token " << i;
    const ExecStats stats = run->stats();
    EXPECT_GT(stats.comm.all_reduce.calls, 0);
    EXPECT_EQ(stats.comm_ranks, tp * pp);  // a rank's device per pipeline stage (exec_stats.h)
    EXPECT_EQ(generate(*run->runner, prompt, g).ids, one_ids);
    // Every rank sums in rank order whatever the timing: a second run gives the same bits.
    EXPECT_EQ(perplexity(*gpu_run(dir.path(), p)->runner, c.ids).nll, r.nll);
  }
}

// Mixtures of experts on one GPU (routing on the GPU, experts grouped on the host, the dense MLP's
// kernels per expert, one combine launch; compute/cuda/cuda_moe.cpp) against the CPU engine:
// Mixtral and Qwen3-MoE, f32 within 1e-3 and bf16 within 2e-2 per token — a 40-token prefill
// (about 20 tokens per expert: the cuBLAS path) and greedy decoding (the GEMV path) — and --tp 2
// over virtual GPUs within 1e-4 of one GPU.
TEST_F(GpuModel, MixturesOfExpertsMatchTheCpuEngine) {
  for (const Arch arch : {Arch::kMixtral, Arch::kQwen3Moe}) {
    for (const DType dtype : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(std::string(arch_name(arch)) + " " + std::string(dtype_name(dtype)));
      testing::TempDir dir("gpu_moe");
      MakeModelOptions o;
      o.arch = arch;
      o.dtype = dtype;
      o.seed = 11;
      o.std = 0.08;
      o.vocab_size = 2000;
      write_random_model(dir.path(), o);
      const std::vector<std::int32_t> ids = testing::some_ids(40, 2000, 5);
      Engine cpu(dir.path(), EngineOptions{});
      const PerplexityResult want = perplexity(cpu, ids);
      const std::unique_ptr<ModelRun> run = gpu_run(dir.path(), one_gpu());
      const PerplexityResult got = perplexity(*run->runner, ids);
      ASSERT_EQ(got.nll.size(), want.nll.size());
      const double tol = dtype == DType::kF32 ? 1e-3 : 2e-2;
      for (std::size_t i = 0; i < want.nll.size(); ++i) EXPECT_NEAR(got.nll[i], want.nll[i], tol) << "token " << i;
      GenerateOptions g;
      g.max_tokens = 8;
      const std::span<const std::int32_t> prompt = std::span(ids).first(10);
      const GenerateResult cg = generate(cpu, prompt, g), gg = generate(*run->runner, prompt, g);
      std::vector<std::int32_t> prefix(prompt.begin(), prompt.end());
      for (std::size_t i = 0; i < cg.ids.size() && i < gg.ids.size(); ++i) {
        if (cg.ids[i] != gg.ids[i]) {
          EXPECT_LE(cpu_top2_gap(cpu, prefix), 0.05) << "greedy token " << i;
          break;
        }
        prefix.push_back(cg.ids[i]);
      }
      if (dtype != DType::kF32) continue;
      PlanInputs p;
      p.virtual_gpus = 2;
      p.tensor_parallel = 2;
      const PerplexityResult tp = perplexity(*gpu_run(dir.path(), p)->runner, ids);
      for (std::size_t i = 0; i < got.nll.size(); ++i) EXPECT_NEAR(tp.nll[i], got.nll[i], 1e-4) << "--tp 2, token " << i;
    }
  }
}

}  // namespace
}  // namespace plexus

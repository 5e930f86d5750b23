// One model on the GPU(s), everything issue 16 asks of it, in one run: the ceilings (device-to-
// device copy bandwidth, cuBLAS bf16 GEMM rate on the model's own shapes), decode at batch 1
// (tokens/s, fraction of the copy bandwidth, J/token from NVML), a prefill of 2048 tokens
// (fraction of the GEMM rate) and batched decode at 1, 8, 32, 64 sequences — each the median of
// several repetitions after a warm-up, through open_model_run and the Runner, as `plexus
// generate` runs. Each part is guarded: a failure is recorded in the JSON and the rest still runs;
// the JSON is rewritten after each part with "complete": false until the end.
// Usage: gpu_bench MODEL_DIR [run options as generate: --devices 0 ...] [--json FILE] ...
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/nvml/nvml_library.h"
#include "cli/model_options.h"
#include "compute/kv_cache.h"
#include "core/args.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/timer.h"
#include "exec/model_run.h"
#include "backend/cuda_availability.h"
#include "kernels/cuda/ceilings.h"
#include "runtime/generate.h"

namespace plexus {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// What the model's weights weigh, from the checkpoint's headers (with --quantize: as quantised).
struct ModelFacts {
  std::int64_t params = 0;         // stored tensors (a tied lm_head once)
  std::int64_t linear_params = 0;  // the layers' matrices: what a prefill multiplies each token by
  double weight_bytes = 0;
  double bytes_per_token = 0;  // read by one decode step: all but the embedding table (unless tied: lm_head)
  // The layers' distinct linear shapes (out, in) and how many of each one layer has.
  std::map<std::pair<std::int64_t, std::int64_t>, int> layer_shapes;
};

ModelFacts model_facts(const ModuleTree& tree) {
  ModelFacts f;
  const bool tied = tree.config().tie_word_embeddings;
  for (const ParamInfo& p : tree.params()) {
    if (p.tied_to) continue;
    const DType t = p.dtype.value_or(DType::kBF16);
    // Block formats (--quantize's projections): whole rows of blocks.
    const double bytes = dtype_is_block(t) && p.shape.size() == 2
                             ? static_cast<double>(p.shape[0]) * static_cast<double>(dtype_row_bytes(t, p.shape[1]))
                             : static_cast<double>(p.numel()) * static_cast<double>(dtype_size(t));
    f.params += p.numel();
    f.weight_bytes += bytes;
    if (p.name != "model.embed_tokens.weight" || tied) f.bytes_per_token += bytes;
    if (p.layer >= 0 && p.shape.size() == 2) {
      f.linear_params += p.numel();
      if (p.layer == 0) ++f.layer_shapes[{p.shape[0], p.shape[1]}];
    }
  }
  return f;
}

std::vector<std::int32_t> default_prompt(int n, std::int64_t vocab) {
  std::vector<std::int32_t> ids;  // scripts/hf_compare.py makes the same list
  for (int i = 0; i < n; ++i) ids.push_back(static_cast<std::int32_t>(i == 0 ? std::min<std::int64_t>(128000, vocab - 1) : (i * 7919 + 13) % std::min<std::int64_t>(vocab, 100000)));
  return ids;
}

class Report {
 public:
  explicit Report(std::string path) : path_(std::move(path)) {}
  Json j = Json::object();
  void save(bool complete) {
    j["complete"] = complete;
    if (!path_.empty()) write_file_atomically(path_, j.dump(2) + "\n");
  }

 private:
  std::string path_;
};

// Runs `part`, recording its error in `out["error"]` instead of ending the run.
void guarded(const char* name, Json& out, Report& report, const std::function<void()>& part) {
  Timer t;
  std::fprintf(stderr, "gpu_bench: %s ...\n", name);
  try {
    part();
  } catch (const std::exception& e) {
    out["error"] = e.what();
    std::fprintf(stderr, "gpu_bench: %s failed: %s\n", name, e.what());
  }
  out["wall_s"] = t.seconds();
  std::fprintf(stderr, "gpu_bench: %s done in %.1f s\n", name, t.seconds());
  report.save(false);
}

// Total energy of one GPU from NVML (mJ), or none.
struct Energy {
  std::unique_ptr<NvmlLibrary> nvml;
  nvmlDevice_t dev = nullptr;
  std::string why;
  explicit Energy(int index) {
    nvml = NvmlLibrary::open("", &why);
    if (!nvml) return;
    if (!nvml->api().total_energy) why = "NVML has no nvmlDeviceGetTotalEnergyConsumption";
    else if (index < 0 || index >= static_cast<int>(nvml->devices().size()) || !nvml->devices()[index]) why = "NVML has no GPU " + std::to_string(index);
    else dev = nvml->devices()[index];
  }
  std::optional<double> millijoules() const {
    unsigned long long mj = 0;
    if (!dev || nvml->api().total_energy(dev, &mj) != 0) return std::nullopt;
    return static_cast<double>(mj);
  }
};

int main_impl(int argc, char** argv) {
  Args args("gpu_bench",
            "Ceilings and decode / prefill / batched-decode rates of one model on the GPU(s) the run options name\n"
            "(the same flags as `plexus generate`: --devices 0, --virtual-devices, --max-memory ...).");
  args.positional("MODEL", "model directory");
  cli::add_run_options(args);
  args.option("--json", "FILE", "write the results as JSON (rewritten after each part; \"complete\" true at the end)")
      .option("--reps", "N", "timed repetitions of each measurement (medians reported)", "5")
      .option("--decode-tokens", "N", "tokens generated per batch-1 decode run", "128")
      .option("--ids", "LIST", "prompt token ids (default: 16 fixed ids, as scripts/hf_compare.py makes)")
      .option("--prefill", "N", "prompt tokens of the prefill measurement", "2048")
      .option("--batches", "LIST", "sequences decoded together in the batched measurement", "1,8,32,64")
      .option("--batch-decode-tokens", "N", "tokens generated per sequence in the batched measurement", "64")
      .option("--copy-mib", "N", "MiB per device-to-device copy of the bandwidth ceiling", "1024")
      .option("--gpu", "N", "physical GPU of the ceilings and NVML energy", "0")
      .option("--skip", "LIST", "parts to leave out: ceilings, decode, prefill, batched", "");
  if (!args.parse(argc - 1, argv + 1)) return 0;
  const std::string model = args.get("MODEL");
  const int reps = static_cast<int>(args.get_int_in("--reps", 1, 1000));
  const int decode_tokens = static_cast<int>(args.get_int_in("--decode-tokens", 2, 1 << 20));
  const int prefill = static_cast<int>(args.get_int_in("--prefill", 1, 1 << 20));
  const int batch_tokens = static_cast<int>(args.get_int_in("--batch-decode-tokens", 2, 1 << 20));
  const int gpu = static_cast<int>(args.get_int_in("--gpu", 0, 1023));
  std::vector<int> batches;
  for (long long b : parse_int_list(args.get("--batches"), "--batches")) {
    if (b < 1 || b > 4096) throw InputError("--batches: each must be between 1 and 4096");
    batches.push_back(static_cast<int>(b));
  }
  const std::string skip = "," + args.get("--skip") + ",";
  auto skipped = [&](const char* part) { return skip.find("," + std::string(part) + ",") != std::string::npos; };

  Report report(args.has("--json") ? args.get("--json") : "");
  Json& j = report.j;
  const ModuleTree tree = load_module_tree(model, quantize_type(cli::run_inputs_from(args).plan));  // as --quantize stores it
  const ModelFacts facts = model_facts(tree);
  const std::int64_t vocab = tree.config().vocab_size;
  const std::vector<std::int32_t> prompt = args.has("--ids") ? cli::ids_from_ids_option(args.get("--ids")) : default_prompt(16, vocab);
  const int max_batch = *std::max_element(batches.begin(), batches.end());
  j["model"] = model;
  j["args"] = std::vector<std::string>(argv + 1, argv + argc);
  j["params"] = facts.params;
  j["linear_params"] = facts.linear_params;
  j["weight_bytes"] = facts.weight_bytes;
  j["bytes_per_token"] = facts.bytes_per_token;
  {
    const CudaAvailability cuda = probe_cuda(CudaFreeMemory::kNone);
    j["gpu"] = gpu < static_cast<int>(cuda.gpus.size())
                   ? cuda.gpus[static_cast<std::size_t>(gpu)].name + ", sm_" + std::to_string(cuda.gpus[static_cast<std::size_t>(gpu)].cc_major) +
                         std::to_string(cuda.gpus[static_cast<std::size_t>(gpu)].cc_minor)
                   : std::string();
  }
  std::printf("gpu_bench %s: %.1fM parameters, %.2f GB of weights, %.2f GB read per decoded token; GPU %d: %s\n", model.c_str(),
              facts.params / 1e6, facts.weight_bytes / 1e9, facts.bytes_per_token / 1e9, gpu,
              j["gpu"].get<std::string>().c_str());
  std::fflush(stdout);

  // Ceilings: copy bandwidth, and cuBLAS on each of a layer's linear shapes at `prefill` rows,
  // combined as a layer's FLOPs over the sum of their times.
  Json& ceil = j["ceilings"] = Json::object();
  if (!skipped("ceilings")) {
    guarded("ceilings", ceil, report, [&] {
      if (cudaSetDevice(gpu) != cudaSuccess) throw RuntimeError("cannot use GPU " + std::to_string(gpu));
      ceil["copy_gbps"] = cuda::cuda_copy_gbps(static_cast<std::size_t>(args.get_int_in("--copy-mib", 1, 1 << 20)) << 20);
      double flops = 0, seconds = 0;
      for (const auto& [shape, count] : facts.layer_shapes) {
        // (weight rows × tokens) = (rows × cols) · (cols × tokens), as the prefill's GEMM.
        const double tf = cuda::cuda_gemm_bf16_tflops(static_cast<int>(shape.first), prefill, static_cast<int>(shape.second), nullptr);
        const double f = 2.0 * prefill * static_cast<double>(shape.first) * static_cast<double>(shape.second) * count;
        flops += f;
        seconds += f / (tf * 1e12);
        ceil["gemm_shapes"].push_back({{"m", prefill}, {"n", shape.first}, {"k", shape.second}, {"count", count}, {"tflops", tf}});
      }
      ceil["gemm_model_tflops"] = flops / seconds / 1e12;
      ceil["gemm_8192_tflops"] = cuda::cuda_gemm_bf16_tflops(8192, 8192, 8192, nullptr);
    });
  }
  auto ceiling = [&](const char* key) { return ceil.contains(key) ? ceil[key].get<double>() : 0.0; };

  // The run: room for the prefill, the decode runs and the widest batch.
  RunInputs in = cli::run_inputs_from(args);
  const std::int64_t context = std::max<std::int64_t>({prefill + 1, static_cast<std::int64_t>(prompt.size()) + decode_tokens,
                                                        static_cast<std::int64_t>(prompt.size()) + batch_tokens});
  in.plan.context = context;
  in.plan.batch = max_batch;
  in.engine.max_context = context;
  if (!args.given("--batch-tokens")) in.engine.max_batch_tokens = std::max(prefill, max_batch);
  Timer load;
  std::unique_ptr<ModelRun> run = plexus::open_model_run(in, model);
  Runner& runner = *run->runner;
  j["load_s"] = load.seconds();
  j["plan"] = run->plan_json;
  std::fprintf(stderr, "gpu_bench: model opened in %.1f s\n%s", load.seconds(), run->plan_text.c_str());
  report.save(false);

  GenerateOptions greedy;
  greedy.sampling.greedy = true;
  Json& dec = j["decode"] = Json::object();
  if (!skipped("decode")) {
    guarded("decode, batch 1", dec, report, [&] {
      GenerateOptions g = greedy;
      g.max_tokens = 8;
      generate(runner, prompt, g);  // warm-up
      g.max_tokens = decode_tokens;
      std::vector<double> tps, e2e;
      const Energy energy(gpu);
      const std::optional<double> mj0 = energy.millijoules();
      Timer wall;
      for (int r = 0; r < reps; ++r) {
        const GenerateResult res = generate(runner, prompt, g);
        tps.push_back(res.decode_tokens_per_s);
        e2e.push_back(static_cast<double>(res.ids.size()) / (res.e2e_ms / 1e3));
      }
      const double seconds = wall.seconds();
      const std::optional<double> mj1 = energy.millijoules();
      dec["prompt_tokens"] = prompt.size();
      dec["new_tokens"] = decode_tokens;
      dec["reps"] = reps;
      dec["decode_tokens_per_s"] = median(tps);
      dec["e2e_tokens_per_s"] = median(e2e);
      dec["all_decode_tokens_per_s"] = tps;
      if (ceiling("copy_gbps") > 0) dec["hbm_fraction"] = facts.bytes_per_token * median(tps) / (ceiling("copy_gbps") * 1e9);
      if (mj0 && mj1) {
        dec["joules"] = (*mj1 - *mj0) / 1e3;
        dec["joules_per_token"] = (*mj1 - *mj0) / 1e3 / (static_cast<double>(decode_tokens) * reps);
        dec["watts"] = (*mj1 - *mj0) / 1e3 / seconds;
      } else {
        dec["energy_unavailable"] = energy.why.empty() ? "NVML gave no energy reading" : energy.why;
      }
    });
  }

  Json& pre = j["prefill"] = Json::object();
  if (!skipped("prefill")) {
    guarded("prefill", pre, report, [&] {
      std::vector<std::int32_t> ids(static_cast<std::size_t>(prefill)), pos(ids.size());
      std::vector<int> seq(ids.size());
      for (int i = 0; i < prefill; ++i) ids[i] = static_cast<std::int32_t>((i * 7919 + 13) % std::min<std::int64_t>(vocab, 100000)), pos[i] = i;
      std::vector<float> logits(static_cast<std::size_t>(runner.vocab_size()));
      const std::int64_t chunk = runner.max_batch_tokens();
      auto once = [&] {
        const int slot = runner.open_sequence(prefill + 1);
        std::fill(seq.begin(), seq.end(), slot);
        Timer t;
        for (std::int64_t b = 0; b < prefill; b += chunk) {
          const std::int64_t n = std::min<std::int64_t>(chunk, prefill - b);
          const std::int64_t last = n - 1;
          runner.forward({std::span(ids).subspan(b, n), std::span(pos).subspan(b, n), std::span(seq).subspan(b, n)},
                         std::span(&last, 1), logits.data());
        }
        const double s = t.seconds();
        runner.close_sequence(slot);
        return s;
      };
      once();  // warm-up
      std::vector<double> secs;
      for (int r = 0; r < reps; ++r) secs.push_back(once());
      const double s = median(secs);
      const double tflops = 2.0 * static_cast<double>(facts.linear_params) * prefill / s / 1e12;
      pre["tokens"] = prefill;
      pre["chunk"] = chunk;
      pre["seconds"] = s;
      pre["all_seconds"] = secs;
      pre["tokens_per_s"] = prefill / s;
      pre["tflops"] = tflops;
      if (ceiling("gemm_model_tflops") > 0) pre["gemm_fraction"] = tflops / ceiling("gemm_model_tflops");
    });
  }

  Json& bat = j["batched"] = Json::array();
  if (!skipped("batched")) {
    for (const int b : batches) {
      Json one = {{"batch", b}};
      guarded(("batched decode, " + std::to_string(b) + " sequences").c_str(), one, report, [&] {
        std::vector<std::vector<std::int32_t>> prompts;
        for (int s = 0; s < b; ++s) {
          std::vector<std::int32_t> p = prompt;
          p.back() = static_cast<std::int32_t>((p.back() + 31 * s) % std::min<std::int64_t>(vocab, 100000));
          prompts.push_back(p);
        }
        GenerateOptions g = greedy;
        g.max_tokens = 4;
        generate_batch(runner, prompts, g);  // warm-up
        g.max_tokens = batch_tokens;
        std::vector<double> tps;
        for (int r = 0; r < std::max(1, reps / 2 + 1); ++r) tps.push_back(generate_batch(runner, prompts, g).decode_tokens_per_s);
        one["new_tokens"] = batch_tokens;
        one["decode_tokens_per_s"] = median(tps);
        one["all_decode_tokens_per_s"] = tps;
        // The read ceiling of a step: the weights once and every sequence's KV cache (f32) at the
        // mean position of the measured steps, at the copy bandwidth; b tokens per step.
        const ModelConfig& c = tree.config();
        const double mean_pos = static_cast<double>(prompt.size()) + static_cast<double>(batch_tokens) / 2.0;
        const double kv_bytes = static_cast<double>(KvCache::bytes_per_token(c.num_layers, c.num_kv_heads, c.head_dim)) *
                                mean_pos * b;
        one["step_read_bytes"] = facts.bytes_per_token + kv_bytes;
        if (ceiling("copy_gbps") > 0) {
          const double ceiling_tps = b * ceiling("copy_gbps") * 1e9 / (facts.bytes_per_token + kv_bytes);
          one["read_ceiling_tokens_per_s"] = ceiling_tps;
          one["read_fraction"] = median(tps) / ceiling_tps;
        }
      });
      bat.push_back(one);
      report.save(false);
    }
  }

  // The table.
  auto num = [](const Json& o, const char* k) { return o.contains(k) ? o[k].get<double>() : -1.0; };
  auto cell = [](double v, const char* fmt) {
    char buf[64];
    if (v < 0) return std::string("-");
    std::snprintf(buf, sizeof buf, fmt, v);
    return std::string(buf);
  };
  std::printf("\n%-44s %14s\n", "metric", "value");
  std::printf("%-44s %14s\n", "D2D copy GB/s (read+write)", cell(num(ceil, "copy_gbps"), "%.0f").c_str());
  std::printf("%-44s %14s\n", ("cuBLAS bf16 TFLOP/s, model shapes, m=" + std::to_string(prefill)).c_str(),
              cell(num(ceil, "gemm_model_tflops"), "%.1f").c_str());
  std::printf("%-44s %14s\n", "cuBLAS bf16 TFLOP/s, 8192^3", cell(num(ceil, "gemm_8192_tflops"), "%.1f").c_str());
  std::printf("%-44s %14s\n", "decode b1 tokens/s", cell(num(dec, "decode_tokens_per_s"), "%.1f").c_str());
  std::printf("%-44s %14s\n", "decode b1 end-to-end tokens/s", cell(num(dec, "e2e_tokens_per_s"), "%.1f").c_str());
  std::printf("%-44s %14s\n", "decode b1 fraction of copy bandwidth", cell(num(dec, "hbm_fraction"), "%.3f").c_str());
  std::printf("%-44s %14s\n", "decode b1 J/token (NVML)", cell(num(dec, "joules_per_token"), "%.4f").c_str());
  std::printf("%-44s %14s\n", ("prefill " + std::to_string(prefill) + " tokens/s").c_str(), cell(num(pre, "tokens_per_s"), "%.0f").c_str());
  std::printf("%-44s %14s\n", "prefill TFLOP/s (2*linear params*tokens)", cell(num(pre, "tflops"), "%.1f").c_str());
  std::printf("%-44s %14s\n", "prefill fraction of cuBLAS rate", cell(num(pre, "gemm_fraction"), "%.3f").c_str());
  for (const Json& one : bat) {
    std::printf("%-44s %14s\n", ("batched decode " + std::to_string(one["batch"].get<int>()) + " seqs tokens/s").c_str(),
                cell(num(one, "decode_tokens_per_s"), "%.1f").c_str());
    std::printf("%-44s %14s\n", "  fraction of the weight+KV read ceiling", cell(num(one, "read_fraction"), "%.3f").c_str());
  }
  for (const auto& [k, v] : j.items()) {
    if (v.is_object() && v.contains("error")) std::printf("error in %s: %s\n", k.c_str(), v["error"].get<std::string>().c_str());
  }
  for (const Json& one : bat) {
    if (one.contains("error")) std::printf("error in batched %d: %s\n", one["batch"].get<int>(), one["error"].get<std::string>().c_str());
  }
  report.save(true);
  return 0;
}

}  // namespace
}  // namespace plexus

int main(int argc, char** argv) {
  try {
    return plexus::main_impl(argc, argv);
  } catch (const plexus::Error& e) {
    std::fprintf(stderr, "gpu_bench: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_bench: %s\n", e.what());
    return 1;
  }
}

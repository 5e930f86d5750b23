// `make bench` engine figures: decode tokens/s against memory read bandwidth, and prefill
// tokens/s against fp32 FMA peak, both ceilings measured in this same run. One measurement at a
// time (--only) serves benchmarks/llama_cpp/run.sh, which sets prefill length, decode depth and
// the number of sequences decoded together for each cell it compares with llama.cpp.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backend/host_info.h"
#include "ceilings.h"
#include "core/args.h"
#include "core/error.h"
#include "core/json.h"
#include "core/timer.h"
#include "planner/moe_reads.h"
#include "runtime/engine.h"

using namespace plexus;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<std::int32_t> random_ids(std::int64_t n, std::int64_t vocab) {
  std::vector<std::int32_t> ids;
  std::uint64_t s = 12345;
  for (std::int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    ids.push_back(static_cast<std::int32_t>((s >> 33) % static_cast<std::uint64_t>(vocab)));
  }
  return ids;
}

// Tokens/s of `runs` prefills of `prompt` random tokens into an empty cache, after `warmup`
// untimed ones.
std::vector<double> measure_prefill(Engine& engine, std::int64_t prompt, int runs, int warmup) {
  const std::vector<std::int32_t> ids = random_ids(prompt, engine.vocab_size());
  std::vector<float> logits(static_cast<std::size_t>(engine.vocab_size()));
  KvCache cache = engine.new_cache(prompt);
  std::vector<double> rates;
  for (int r = -warmup; r < runs; ++r) {
    Timer t;
    engine.prefill(cache, ids, 0, logits.data());
    if (r >= 0) rates.push_back(static_cast<double>(prompt) / t.seconds());
  }
  return rates;
}

// Copies every layer's keys and values of `from` into `to` (same shape).
void copy_cache(KvCache& from, KvCache& to, const ModelConfig& c) {
  const std::size_t floats = static_cast<std::size_t>(from.capacity() * from.head_dim());
  for (int l = 0; l < c.num_layers; ++l) {
    for (int h = 0; h < c.num_kv_heads; ++h) {
      std::memcpy(to.keys(l, h), from.keys(l, h), floats * sizeof(float));
      std::memcpy(to.values(l, h), from.values(l, h), floats * sizeof(float));
    }
  }
}

// Tokens/s (all sequences together) of `runs` x `steps` decode steps of `batch` sequences, each
// holding the same `depth` tokens of context (one prefill, copied: a shared prompt), after
// `warmup` untimed runs. Every run decodes positions depth .. depth + steps - 1 again.
std::vector<double> measure_decode(Engine& engine, std::int64_t depth, std::int64_t steps, std::int64_t batch,
                                   int runs, int warmup) {
  std::vector<float> logits(static_cast<std::size_t>(batch * engine.vocab_size()));
  std::vector<KvCache> caches;
  for (std::int64_t b = 0; b < batch; ++b) caches.push_back(engine.new_cache(depth + steps));
  if (depth > 0) {
    engine.prefill(caches[0], random_ids(depth, engine.vocab_size()), 0, logits.data());
    for (std::int64_t b = 1; b < batch; ++b) copy_cache(caches[0], caches[static_cast<std::size_t>(b)], engine.config());
  }
  std::vector<KvCache*> cache_of(static_cast<std::size_t>(batch));
  std::vector<std::int64_t> rows(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    cache_of[static_cast<std::size_t>(b)] = &caches[static_cast<std::size_t>(b)];
    rows[static_cast<std::size_t>(b)] = b;
  }
  std::vector<std::int32_t> ids(static_cast<std::size_t>(batch)), pos(static_cast<std::size_t>(batch));
  std::vector<double> rates;
  for (int r = -warmup; r < runs; ++r) {
    Timer t;
    for (std::int64_t s = 0; s < steps; ++s) {
      for (std::int64_t b = 0; b < batch; ++b) {
        ids[static_cast<std::size_t>(b)] = static_cast<std::int32_t>((s * batch + b) % engine.vocab_size());
        pos[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(depth + s);
      }
      engine.forward(TokenBatch{ids, pos, cache_of}, rows, logits.data());
    }
    if (r >= 0) rates.push_back(static_cast<double>(steps * batch) / t.seconds());
  }
  return rates;
}

}  // namespace

int main(int argc, char** argv) {
  Args args("engine_bench", "Decode and prefill speed of one model against this machine's measured ceilings.");
  args.positional("MODEL", "model directory")
      .option("--threads", "N", "threads (0: all)", "0")
      .option("--wait", "POLICY", "how idle threads wait: spin, passive or auto", "auto")
      .option("--prompt", "N", "prefill prompt length", "256")
      .option("--decode", "N", "decode steps per repeat", "64")
      .option("--depth", "N", "tokens of context before the decode steps (default: --prompt)")
      .option("--batch", "N", "sequences decoded together (each with its own cache, same context)", "1")
      .option("--repeats", "N", "repeats (median reported)", "5")
      .option("--warmup", "N", "untimed repeats before the timed ones", "1")
      .option("--only", "WHAT", "all | ceilings | prefill | decode", "all")
      .flag("--json", "print JSON");
  try {
    if (!args.parse(argc - 1, argv + 1)) return 0;
    const int threads = static_cast<int>(args.get_int("--threads"));
    const std::int64_t prompt = args.get_int("--prompt"), steps = args.get_int("--decode");
    const std::int64_t depth = args.has("--depth") ? args.get_int("--depth") : prompt;
    const std::int64_t batch = args.get_int("--batch");
    const int repeats = static_cast<int>(args.get_int("--repeats")), warmup = static_cast<int>(args.get_int("--warmup"));
    const std::string only = args.get("--only");
    if (only != "all" && only != "ceilings" && only != "prefill" && only != "decode") {
      throw InputError("--only: '" + only + "' is not one of all, ceilings, prefill, decode");
    }
    if (prompt < 1 || steps < 1 || batch < 1 || depth < 0 || repeats < 1 || warmup < 0) {
      throw InputError("--prompt, --decode, --batch and --repeats must be >= 1, --depth and --warmup >= 0");
    }
    const bool do_ceilings = only == "all" || only == "ceilings", do_prefill = only == "all" || only == "prefill",
               do_decode = only == "all" || only == "decode";
    EngineOptions eo;
    eo.threads = threads;
    eo.wait = wait_policy_flag(args.get("--wait"));
    eo.max_batch_tokens = std::max(prompt, batch);
    Engine engine(args.get("MODEL"), eo);
    double bandwidth = 0, peak = 0;
    const char* bandwidth_strategy = "";
    std::vector<std::pair<const char*, double>> bandwidth_by_strategy;
    if (do_ceilings) {
      ThreadPool pool(engine.threads());
      const bench::ReadBandwidth rb = bench::read_bandwidth(pool, std::int64_t{1} << 30, repeats);
      bandwidth = rb.bytes_per_s;
      bandwidth_strategy = rb.strategy;
      bandwidth_by_strategy = rb.medians;
      peak = bench::fma_peak(pool, repeats);
    }

    const ModelConfig& c = engine.config();
    const LlamaFamilyModel& m = engine.model();
    // Bytes a decode step reads: every layer matrix and the lm_head as stored (block formats
    // by their row bytes; one embedding row per sequence is negligible), plus each sequence's
    // f32 keys and values up to its position. A mixture-of-experts layer reads its router and the
    // experts its tokens chose: for `batch` tokens choosing k of E independently, E·(1 − (1 −
    // k/E)^batch) distinct experts on average (prefill FLOPs count k experts per token).
    std::int64_t layer_params = 0;
    double weight_bytes = 0;
    const double E = static_cast<double>(c.moe.num_experts), k = static_cast<double>(c.moe.experts_per_token);
    const double experts_read =
        c.is_moe() ? expected_experts_read(c.moe.num_experts, c.moe.experts_per_token, static_cast<double>(batch)) : 0;
    for (int l = 0; l < c.num_layers; ++l) {
      const LayerWeights& w = m.layer_weights(l);
      for (const WeightMatrix* x : layer_matrices(w)) {
        const bool expert = !w.experts.empty() && x != &w.q && x != &w.k && x != &w.v && x != &w.o && x != &w.router;
        layer_params += expert ? static_cast<std::int64_t>(static_cast<double>(x->rows * x->cols) * k / E) : x->rows * x->cols;
        weight_bytes += expert ? static_cast<double>(x->bytes()) * experts_read / E : static_cast<double>(x->bytes());
      }
    }
    const std::int64_t head_params = m.lm_head().rows * m.lm_head().cols;
    weight_bytes += static_cast<double>(m.lm_head().bytes());
    const std::int64_t kv_bytes_per_token = KvCache::bytes_per_token(c.num_layers, c.num_kv_heads, c.head_dim);
    const double mean_context = static_cast<double>(depth) + static_cast<double>(steps - 1) / 2 + 1;
    const double bytes_per_step = weight_bytes +
                                  static_cast<double>(batch) * mean_context * static_cast<double>(kv_bytes_per_token);
    // FLOPs prefill actually executes in matrix products: every layer matrix for every token,
    // the lm_head for the last token only (attention is extra work, not counted).
    const double prefill_flop = 2.0 * static_cast<double>(layer_params) * static_cast<double>(prompt) + 2.0 * static_cast<double>(head_params);
    // The convention (like MFU): 2 FLOP per model parameter per prompt token, all
    // parameters counted once (a tied embedding/head once). It credits the head for every token,
    // though prefill computes logits only for the last one, so both figures are printed.
    const std::int64_t model_params =
        layer_params + head_params + (m.lm_head().data == m.embedding().data ? 0 : m.embedding().rows * m.embedding().cols);

    Json j = {{"model", args.get("MODEL")},
              {"dtype", std::string(dtype_name(m.lm_head().dtype))},
              {"layer_dtype", std::string(dtype_name(m.layer_weights(0).q.dtype))},
              {"threads", engine.threads()},
              {"wait", args.get("--wait")},
              {"isa", std::string(engine.kernels().name)},
              {"model_params", model_params}};
    if (do_ceilings) {
      j["read_bandwidth_gb_s"] = bandwidth / 1e9;
      j["read_bandwidth_strategy"] = std::string(bandwidth_strategy);
      j["fma_peak_gflop_s"] = peak / 1e9;
      j["fma_peak_isa"] = bench::fma_peak_isa();
    }
    double prefill = 0, decode = 0;
    if (do_prefill) {
      const std::vector<double> rates = measure_prefill(engine, prompt, repeats, warmup);
      prefill = median(rates);
      j["prefill_tokens"] = prompt;
      j["prefill_tokens_per_s"] = prefill;
      j["prefill_runs_tokens_per_s"] = Json(rates);
      j["prefill_flop_per_token"] = prefill_flop / static_cast<double>(prompt);
      j["prefill_gflop_s"] = prefill_flop / (static_cast<double>(prompt) / prefill) / 1e9;
      if (do_ceilings) {
        j["prefill_fraction_of_fma_peak"] = peak > 0 ? prefill_flop / (static_cast<double>(prompt) / prefill) / peak : 0.0;
        j["prefill_fraction_of_fma_peak_2flop_per_param"] = peak > 0 ? 2.0 * static_cast<double>(model_params) * prefill / peak : 0.0;
      }
    }
    if (do_decode) {
      const std::vector<double> rates = measure_decode(engine, depth, steps, batch, repeats, warmup);
      decode = median(rates);
      j["decode_depth"] = depth;
      j["decode_steps"] = steps;
      j["decode_batch"] = batch;
      j["decode_tokens_per_s"] = decode;
      j["decode_runs_tokens_per_s"] = Json(rates);
      j["decode_weight_bytes"] = weight_bytes;
      j["decode_bytes_per_step"] = bytes_per_step;
      if (do_ceilings) j["decode_fraction_of_bandwidth"] = bytes_per_step * decode / static_cast<double>(batch) / bandwidth;
    }
    if (args.get_flag("--json")) {
      std::printf("%s\n", j.dump().c_str());
      return 0;
    }
    std::printf("engine: %s, %s weights, %d threads, wait %s, %s kernels (FMA peak probed in %s; host ISA %s)\n",
                args.get("MODEL").c_str(), std::string(dtype_name(m.lm_head().dtype)).c_str(), engine.threads(),
                args.get("--wait").c_str(), std::string(engine.kernels().name).c_str(), bench::fma_peak_isa(),
                isa_summary(read_host_info().isa).c_str());
    if (do_ceilings) {
      std::printf("  ceilings (this run): read bandwidth %.2f GB/s (best strategy: %s), fp32 FMA peak %.1f GFLOP/s\n", bandwidth / 1e9,
                  bandwidth_strategy, peak / 1e9);
      std::printf("  read strategies (median GB/s):");
      for (const auto& [name, rate] : bandwidth_by_strategy) std::printf(" %s %.2f;", name, rate / 1e9);
      std::printf("\n");
    }
    if (do_decode) {
      const double bw = bytes_per_step * decode / static_cast<double>(batch);
      std::printf("  decode  batch %lld at depth %lld: %8.1f tokens/s  x %.1f MB/step = %.2f GB/s", static_cast<long long>(batch),
                  static_cast<long long>(depth), decode, bytes_per_step / 1e6, bw / 1e9);
      if (do_ceilings) std::printf(" = %.0f%% of read bandwidth", 100 * bw / bandwidth);
      std::printf("\n");
    }
    if (do_prefill) {
      const double flops = prefill_flop / (static_cast<double>(prompt) / prefill);
      const double convention_flops = 2.0 * static_cast<double>(model_params) * prefill;
      std::printf("  prefill %4lld tok: %8.1f tokens/s = %.1f GFLOP/s executed in matmuls", static_cast<long long>(prompt), prefill, flops / 1e9);
      if (do_ceilings) std::printf(" = %.0f%% of fp32 FMA peak", peak > 0 ? 100 * flops / peak : 0.0);
      std::printf("\n                     at 2 FLOP/parameter/token (%.1fM parameters): %.1f GFLOP/s", static_cast<double>(model_params) / 1e6,
                  convention_flops / 1e9);
      if (do_ceilings) std::printf(" = %.0f%% of fp32 FMA peak", peak > 0 ? 100 * convention_flops / peak : 0.0);
      std::printf("\n");
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "engine_bench: error: %s\n", e.what());
    return static_cast<int>(e.code());
  }
}

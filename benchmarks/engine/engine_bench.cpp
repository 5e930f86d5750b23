// `make bench` engine figures: decode tokens/s at batch 1 against memory read bandwidth, and
// prefill tokens/s against fp32 FMA peak, both ceilings measured in this same run.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "backend/host_info.h"
#include "ceilings.h"
#include "core/args.h"
#include "core/error.h"
#include "core/json.h"
#include "core/timer.h"
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

}  // namespace

int main(int argc, char** argv) {
  Args args("engine_bench", "Decode and prefill speed of one model against this machine's measured ceilings.");
  args.positional("MODEL", "model directory")
      .option("--threads", "N", "threads (0: all)", "0")
      .option("--wait", "POLICY", "how idle threads wait: spin, passive or auto", "auto")
      .option("--prompt", "N", "prefill prompt length", "256")
      .option("--decode", "N", "decode steps per repeat", "64")
      .option("--repeats", "N", "repeats (median reported)", "5")
      .flag("--json", "print JSON");
  try {
    if (!args.parse(argc - 1, argv + 1)) return 0;
    const int threads = static_cast<int>(args.get_int("--threads"));
    const std::int64_t prompt = args.get_int("--prompt"), steps = args.get_int("--decode");
    const int repeats = static_cast<int>(args.get_int("--repeats"));
    EngineOptions eo;
    eo.threads = threads;
    const std::optional<WaitPolicy> wait = parse_wait_policy(args.get("--wait"));
    if (!wait) throw InputError("--wait must be " + std::string(kWaitPolicyChoices) + ", got '" + args.get("--wait") + "'");
    eo.wait = *wait;
    eo.max_batch_tokens = prompt;
    Engine engine(args.get("MODEL"), eo);
    ThreadPool pool(engine.threads());
    const double bandwidth = bench::read_bandwidth(pool, std::int64_t{1} << 30, repeats);
    const double peak = bench::fma_peak(pool, repeats);

    const ModelConfig& c = engine.config();
    const LlamaFamilyModel& m = engine.model();
    // Bytes a decode step reads: every layer matrix and the lm_head (one embedding row is negligible).
    std::int64_t layer_params = 0;
    for (int l = 0; l < c.num_layers; ++l) {
      const LayerWeights& w = m.layer_weights(l);
      for (const WeightMatrix* x : {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down}) layer_params += x->rows * x->cols;
    }
    const std::int64_t head_params = m.lm_head().rows * m.lm_head().cols;
    const std::int64_t bytes_per_token = (layer_params + head_params) * static_cast<std::int64_t>(dtype_size(m.lm_head().dtype));

    const std::vector<std::int32_t> ids = random_ids(prompt, engine.vocab_size());
    std::vector<float> logits(static_cast<std::size_t>(engine.vocab_size()));
    std::vector<double> prefill_rates, decode_rates;
    for (int r = 0; r < repeats; ++r) {
      KvCache cache = engine.new_cache(prompt + steps);
      Timer t;
      engine.prefill(cache, ids, 0, logits.data());
      prefill_rates.push_back(static_cast<double>(prompt) / t.seconds());
      std::int32_t next = 0, pos = static_cast<std::int32_t>(prompt);
      KvCache* cp = &cache;
      const std::int64_t row = 0;
      Timer d;
      for (std::int64_t s = 0; s < steps; ++s, ++pos) {
        next = static_cast<std::int32_t>(s % engine.vocab_size());
        engine.forward(TokenBatch{std::span(&next, 1), std::span(&pos, 1), std::span(&cp, 1)}, std::span(&row, 1), logits.data());
      }
      decode_rates.push_back(static_cast<double>(steps) / d.seconds());
    }
    const double prefill = median(prefill_rates), decode = median(decode_rates);
    // FLOPs prefill actually executes in matrix products: every layer matrix for every token,
    // the lm_head for the last token only (attention is extra work, not counted).
    const double prefill_flop = 2.0 * static_cast<double>(layer_params) * static_cast<double>(prompt) + 2.0 * static_cast<double>(head_params);
    const double prefill_flops = prefill_flop / (static_cast<double>(prompt) / prefill);
    // The convention (like MFU): 2 FLOP per model parameter per prompt token, all
    // parameters counted once (a tied embedding/head once). It credits the head for every token,
    // though prefill computes logits only for the last one, so both figures are printed.
    const std::int64_t model_params =
        layer_params + head_params + (m.lm_head().data == m.embedding().data ? 0 : m.embedding().rows * m.embedding().cols);
    const double convention_flops = 2.0 * static_cast<double>(model_params) * prefill;
    const double decode_bw = static_cast<double>(bytes_per_token) * decode;
    const Json j = {{"model", args.get("MODEL")},
                    {"dtype", std::string(dtype_name(m.lm_head().dtype))},
                    {"threads", engine.threads()},
                    {"isa", std::string(engine.kernels().name)},
                    {"read_bandwidth_gb_s", bandwidth / 1e9},
                    {"fma_peak_gflop_s", peak / 1e9},
                    {"decode_tokens_per_s", decode},
                    {"decode_bytes_per_token", bytes_per_token},
                    {"decode_fraction_of_bandwidth", decode_bw / bandwidth},
                    {"prefill_tokens", prompt},
                    {"prefill_tokens_per_s", prefill},
                    {"prefill_gflop_s", prefill_flops / 1e9},
                    {"prefill_fraction_of_fma_peak", peak > 0 ? prefill_flops / peak : 0.0},
                    {"model_params", model_params},
                    {"prefill_fraction_of_fma_peak_2flop_per_param", peak > 0 ? convention_flops / peak : 0.0}};
    if (args.get_flag("--json")) {
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("engine: %s, %s weights, %d threads, %s kernels (FMA peak probed in %s; host ISA %s)\n", args.get("MODEL").c_str(),
                  std::string(dtype_name(m.lm_head().dtype)).c_str(), engine.threads(), std::string(engine.kernels().name).c_str(),
                  bench::fma_peak_isa(), isa_summary(read_host_info().isa).c_str());
      std::printf("  ceilings (this run): read bandwidth %.2f GB/s, fp32 FMA peak %.1f GFLOP/s\n", bandwidth / 1e9, peak / 1e9);
      std::printf("  decode  batch 1 : %8.1f tokens/s  x %.1f MB/token = %.2f GB/s = %.0f%% of read bandwidth\n", decode,
                  static_cast<double>(bytes_per_token) / 1e6, decode_bw / 1e9, 100 * decode_bw / bandwidth);
      std::printf("  prefill %4lld tok: %8.1f tokens/s = %.1f GFLOP/s executed in matmuls = %.0f%% of fp32 FMA peak\n",
                  static_cast<long long>(prompt), prefill, prefill_flops / 1e9, peak > 0 ? 100 * prefill_flops / peak : 0.0);
      std::printf("                     at 2 FLOP/parameter/token (%.1fM parameters): %.1f GFLOP/s = %.0f%% of fp32 FMA peak\n",
                  static_cast<double>(model_params) / 1e6, convention_flops / 1e9, peak > 0 ? 100 * convention_flops / peak : 0.0);
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "engine_bench: error: %s\n", e.what());
    return static_cast<int>(e.code());
  }
}

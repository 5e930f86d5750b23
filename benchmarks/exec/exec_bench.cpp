// Multi-device execution benchmark: decode tokens/s for batch 1 and 8 on 1, 2 and 4 virtual
// devices, weights resident vs half offloaded to cpu memory, with each device's busy fraction.
// The peer of every row is the 1-device run of the same batch and residence, in the same run.
// Usage: exec_bench MODEL_DIR [--tokens N] [--prompt N]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_args.h"
#include "core/error.h"
#include "exec/executor.h"
#include "exec/run_devices.h"
#include "model/config.h"
#include "runtime/generate.h"

namespace plexus {
namespace {

// Layers cut into n contiguous blocks, embedding on device 0, head on the last; with
// `offload`, the second half of every block is kept in host memory and streamed in.
DeviceMap bench_map(int n_layers, int n, bool offload) {
  DeviceMap m;
  m.set("model.embed_tokens", DeviceId::accelerator(0));
  for (int d = 0; d < n; ++d) {
    const int first = n_layers * d / n, end = n_layers * (d + 1) / n;
    for (int l = first; l < end; ++l) {
      const bool streamed = offload && l >= first + (end - first) / 2;
      m.set("model.layers." + std::to_string(l), streamed ? DeviceId::cpu() : DeviceId::accelerator(d));
    }
  }
  m.set("model.norm", DeviceId::accelerator(n - 1));
  m.set("lm_head", DeviceId::accelerator(n - 1));
  return m;
}

struct Row {
  double decode_tps = 0;
  ExecStats stats;
};

Row run(const std::string& model, int n, bool offload, int batch, int prompt_tokens, int new_tokens) {
  const ModelConfig c = load_model_config(model);
  Budgets b;
  for (int i = 0; i < n; ++i) b.set(DeviceId::accelerator(i), 16ull << 30);
  b.set(DeviceId::cpu(), 16ull << 30);
  DeviceRegistry devices = make_run_devices(b, 0, 16ull << 30);
  ExecutorOptions o;
  o.max_batch_tokens = 256;
  o.max_context = prompt_tokens + new_tokens;
  Executor x(model, bench_map(c.num_layers, n, offload), devices, o);
  std::vector<std::vector<std::int32_t>> prompts;
  for (int s = 0; s < batch; ++s) {
    std::vector<std::int32_t> p;
    for (int t = 0; t < prompt_tokens; ++t) p.push_back(static_cast<std::int32_t>((s * 977 + t * 131 + 7) % c.vocab_size));
    prompts.push_back(p);
  }
  GenerateOptions g;
  g.max_tokens = new_tokens;  // no stop ids: every sequence runs to the end
  const BatchGenerateResult r = generate_batch(x, prompts, g);
  return {r.decode_tokens_per_s, x.stats()};
}

int main_impl(int argc, char** argv) {
  const std::optional<ModelBenchArgs> args = parse_model_bench_args(argc, argv, "exec_bench", ModelBenchArgs{"", 16, 16});
  if (!args) return 2;
  const std::string model = args->model;
  const int new_tokens = args->new_tokens, prompt_tokens = args->prompt_tokens;
  std::printf("decode tokens/s (all sequences), %d prompt + %d new tokens per sequence; busy = share of forward wall time\n"
              "each virtual device computed (sum > 1: devices overlapped); vs 1 dev = ratio to the 1-device run\n\n",
              prompt_tokens, new_tokens);
  std::printf("%-9s %5s %4s %9s %8s %6s %7s %8s  %s\n", "weights", "batch", "devs", "tok/s", "vs 1 dev", "mb", "busy+", "stream s",
              "busy per device");
  for (bool offload : {false, true}) {
    for (int batch : {1, 8}) {
      double base = 0;
      for (int n : {1, 2, 4}) {
        const Row r = run(model, n, offload, batch, prompt_tokens, new_tokens);
        if (n == 1) base = r.decode_tps;
        std::string per;
        for (const DeviceRunStats& d : r.stats.devices) {
          if (d.ordinal < 0) continue;
          char buf[32];
          std::snprintf(buf, sizeof buf, "%s%.2f", per.empty() ? "" : " ", d.busy_fraction);
          per += buf;
        }
        std::printf("%-9s %5d %4d %9.1f %8.2f %6d %7.2f %8.3f  %s\n", offload ? "half-cpu" : "resident", batch, n, r.decode_tps,
                    base > 0 ? r.decode_tps / base : 0.0, r.stats.micro_batches, r.stats.busy_sum(), r.stats.stream_copy_s,
                    per.c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace plexus

int main(int argc, char** argv) {
  try {
    return plexus::main_impl(argc, argv);
  } catch (const plexus::Error& e) {
    std::fprintf(stderr, "exec_bench: %s\n", e.what());
    return static_cast<int>(e.code());
  }
}

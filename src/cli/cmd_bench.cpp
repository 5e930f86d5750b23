// `plexus bench CONFIG.yaml`: run a benchmark described in YAML (one run, or a sweep grid) and
// write JSON, CSV and HTML reports; `plexus bench compare A.json B.json ...` puts results side by side.
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_runner.h"
#include "bench/compare.h"
#include "bench/config_loader.h"
#include "bench/gpu_check.h"
#include "bench/openai_runner.h"
#include "bench/report_files.h"
#include "cli/commands.h"
#include "cli/interrupt_guard.h"
#include "core/args.h"
#include "core/error.h"

namespace plexus::cli {

namespace {

std::string fixed(const Json& j, const char* a, const char* b, const char* c = nullptr, int digits = 1) {
  const Json* v = &j;
  for (const char* k : {a, b, c}) {
    if (!k) break;
    if (!v->is_object() || !v->contains(k)) return "n/a";
    v = &(*v)[k];
  }
  if (!v->is_number()) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v->get<double>());
  return buf;
}

std::string describe_point(const Json& sweep_point) {
  if (!sweep_point.is_object() || sweep_point.empty()) return "";
  std::string s;
  for (auto it = sweep_point.begin(); it != sweep_point.end(); ++it) {
    s += (s.empty() ? "" : ", ") + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return " (" + s + ")";
}

void print_summary(const Json& r, std::size_t i, std::size_t n) {
  const Json& e = r["energy"];
  std::string energy = "energy unavailable (no GPU energy or power, no readable RAPL)";
  if (e["total_j"].is_number()) {
    energy = "energy " + fixed(e, "total_j", nullptr, nullptr, 2) + " J, " + fixed(e, "j_per_token", nullptr, nullptr, 4) +
             " J/token (" + e["method"].get<std::string>() + ")";
  }
  const std::size_t devices = r["config"]["device_ids"].size();
  const Json comm = r.contains("execution") && r["execution"].is_object() ? r["execution"].value("communication", Json()) : Json();
  if (comm.is_object()) {  // tensor parallelism: what the collectives cost each token
    char line[160];
    std::snprintf(line, sizeof line, "; collectives %.2f KiB, %.3f ms per token and rank (%.1f%% of the forward time)",
                  comm.value("bytes_per_token", 0.0) / 1024.0, comm.value("seconds_per_token", 0.0) * 1e3,
                  100.0 * comm.value("share_of_forward_time", 0.0));
    energy += line;
  }
  const bool served = r.contains("server") && r["server"].is_object();  // backend.type openai
  std::printf("[%zu/%zu]%s %s: %s output tok/s (%s total), %s samples/s; ttft p50 %s ms, tpot p50 %s ms, e2e p50 %s ms; %s\n",
              i + 1, n, describe_point(r["sweep_point"]).c_str(),
              served    ? (r["server"].value("engine", std::string()) + " at " + r["server"].value("url", std::string())).c_str()
              : r.contains("command") ? ("engine " + r.value("engine", std::string()) + " (a command)").c_str()  // backend.type command
              : devices ? (std::to_string(devices) + " device(s), " + r["config"]["backend"]["device_map"].get<std::string>()).c_str()
                        : "one engine on the host",
              fixed(r, "throughput", "tokens_per_s").c_str(), fixed(r, "throughput", "total_tokens_per_s").c_str(),
              fixed(r, "throughput", "samples_per_s", nullptr, 2).c_str(), fixed(r, "latency", "ttft_ms", "p50").c_str(),
              fixed(r, "latency", "tpot_ms", "p50").c_str(), fixed(r, "latency", "e2e_ms", "p50").c_str(), energy.c_str());
  std::fflush(stdout);
}

int cmd_bench_compare(int argc, char** argv) {
  Args args("bench compare",
            "Key metrics of several benchmark results side by side, with each one's ratio to the first (B/A).\n"
            "A sweep summary (NAME.json with \"runs\") counts as one column per run.");
  args.positional("A.json", "the baseline result (or a sweep summary: one column per run)")
      .positional("B.json", "a result to compare", /*required=*/false)
      .epilog("More result files may follow B.json.");
  args.flag("--json", "print {\"columns\", \"metrics\": [{\"metric\", \"better\", \"values\", \"ratios\"}]}");
  std::vector<std::string> files;
  std::vector<std::string> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" || a == "--help" || a == "-h") rest.push_back(a);
    else if (!a.empty() && a[0] == '-') throw InputError("bench compare: unknown option '" + a + "' (see --help)");
    else files.push_back(a);
  }
  std::vector<std::string> parse_args = rest;
  for (std::size_t i = 0; i < files.size() && i < 2; ++i) parse_args.push_back(files[i]);
  if (!args.parse(parse_args)) return 0;
  const auto cols = bench::load_compare_inputs(files);
  if (args.get_flag("--json")) {
    std::printf("%s\n", bench::compare_json(cols).dump(2).c_str());
  } else {
    std::printf("%s", bench::compare_table(cols).c_str());
  }
  return 0;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  if (argc >= 1 && std::string(argv[0]) == "compare") return cmd_bench_compare(argc - 1, argv + 1);
  Args args("bench",
            "Run the benchmark a YAML file describes: model, backend (devices, device map, budgets), scenario\n"
            "(prompts, samples, batch size, new tokens, warm-up), monitor and outputs; with `sweep`, one run per\n"
            "point of the grid. Measures throughput, latency percentiles (ttft, tpot, e2e), energy and per-device\n"
            "statistics, and writes DIR/NAME.json, DIR/NAME.csv (one row per run, appended) and DIR/NAME.html,\n"
            "each rewritten atomically as soon as a run ends. A failing sweep point is recorded as failed and the\n"
            "sweep goes on (exit 1 at the end); SIGINT/SIGTERM keep what is complete, marked interrupted (exit 130).");
  args.positional("CONFIG.yaml", "the benchmark configuration (schema: docs/benchmarks.md)")
      .option("--output-dir", "DIR", "where reports go (overrides output.dir; default bench-results)")
      .repeatable_option("--set", "KEY=VALUE", "override a key, e.g. --set scenario.max_sequences=4 or --set backend.device_ids=[0,1]")
      .flag("--allow-cpu-devices", "a configuration naming GPUs (backend.device_ids) on a host where CUDA sees none runs "
                                   "on virtual CPU devices (its budgets, else the host's memory shared), after a warning, instead of exiting 2")
      .flag("--quiet", "no progress lines on stderr");
  args.epilog("`plexus bench compare A.json B.json ...` compares results. See docs/benchmarks.md.");
  if (!args.parse(argc, argv)) return 0;
  // From here on SIGINT / SIGTERM only set a flag: the runs stop at the next batch and what is
  // complete is written.
  const InterruptGuard guard;
  const std::string file = args.get("CONFIG.yaml");
  bench::LoadedConfig loaded = bench::load_bench_config(file, args.get_all("--set"));
  const bool quiet = args.get_flag("--quiet");
  // GPUs asked for where there are none: refused before anything runs or is written.
  for (const std::string& warning : bench::check_gpus_asked(loaded.points, file, args.get_flag("--allow-cpu-devices"))) {
    std::fprintf(stderr, "plexus bench: warning: %s\n", warning.c_str());
  }
  bench::check_openai_servers(loaded.points, file);  // an unreachable server: exit 2 before any load
  const bench::BenchConfig& first = loaded.points.front().config;
  const std::optional<std::string> dir_flag = args.get_optional("--output-dir");
  const std::string dir = dir_flag.value_or(first.output.dir);
  const std::size_t n = loaded.points.size();
  // Before anything is measured: a directory that cannot take the reports fails now, not after the run.
  bench::ReportWriter reports(dir, first.name, first.output.formats, loaded.sweep, n,
                              dir_flag ? std::string("--output-dir") : file + ": output.dir");
  std::printf("bench %s: %zu run%s of %s\n", first.name.c_str(), n, n == 1 ? "" : "s", first.model.c_str());
  std::fflush(stdout);

  std::size_t failed = 0;
  bool interrupted = false;
  for (std::size_t i = 0; i < n && !interrupted; ++i) {
    const bench::BenchPoint& p = loaded.points[i];
    auto log = [&](const std::string& line) {
      if (!quiet) std::fprintf(stderr, "[%zu/%zu]%s %s\n", i + 1, n, describe_point(p.sweep_point).c_str(), line.c_str());
    };
    if (InterruptGuard::requested()) {
      interrupted = true;
      break;
    }
    Json result;
    try {
      result = bench::run_point(p, file, log, [] { return InterruptGuard::requested(); });
    } catch (const Interrupted& e) {
      result = bench::unmeasured_point(p, "interrupted", e.what());
    } catch (const InputError& e) {
      if (n == 1) throw;  // a configuration error of a single run: nothing ran, nothing to record
      result = bench::unmeasured_point(p, "failed", e.what());
    } catch (const std::exception& e) {
      result = bench::unmeasured_point(p, "failed", e.what());
      if (n == 1) {
        reports.add(result);
        throw;
      }
    }
    const std::string status = bench::result_status(result);
    if (status == "failed") {
      ++failed;
      std::fprintf(stderr, "[%zu/%zu]%s failed: %s\n", i + 1, n, describe_point(p.sweep_point).c_str(),
                   result["error"].get<std::string>().c_str());
    } else if (result.contains("throughput")) {
      print_summary(result, i, n);
    }
    reports.add(std::move(result));  // written now: a later failure or signal cannot lose it
    interrupted = status == "interrupted" || InterruptGuard::requested();
  }
  if (interrupted) reports.mark_interrupted();
  const bench::WrittenReports& w = reports.written();
  for (const std::string& j : w.json) std::printf("wrote %s\n", j.c_str());
  if (!w.csv.empty()) {
    std::printf("wrote %s (%s %d row%s)\n", w.csv.c_str(), w.csv_appended ? "appended" : "new file,", w.csv_rows,
                w.csv_rows == 1 ? "" : "s");
    if (w.csv_diverted) {
      std::fprintf(stderr, "note: %s/%s.csv has other columns (another model, device count or plexus version): rows went to %s instead\n",
                   dir.c_str(), first.name.c_str(), w.csv.c_str());
    }
  }
  if (!w.html.empty()) std::printf("HTML report: %s\n", w.html.c_str());
  std::fflush(stdout);
  if (interrupted) {
    std::fprintf(stderr, "plexus bench: interrupted by %s: kept the %zu run(s) recorded (marked \"interrupted\": true)\n",
                 InterruptGuard::signal_number() == SIGTERM ? "SIGTERM" : "SIGINT", reports.results().size());
    return static_cast<int>(ExitCode::kInterrupted);
  }
  if (failed > 0) {
    std::fprintf(stderr, "plexus bench: %zu of %zu run(s) failed (recorded with \"status\": \"failed\" and their error)\n", failed, n);
    return 1;
  }
  return 0;
}

}  // namespace plexus::cli

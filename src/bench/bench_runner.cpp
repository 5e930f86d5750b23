// One benchmark point from configuration to result tree.
#include "bench/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>

#include "bench/bench_metrics.h"
#include "bench/command_run.h"
#include "bench/device_timeline.h"
#include "bench/environment.h"
#include "bench/model_maker.h"
#include "bench/openai_runner.h"
#include "bench/prompts.h"
#include "bench/pytorch_backend.h"
#include "core/dtype.h"
#include "core/error.h"
#include "exec/model_run.h"
#include "model/model_location.h"
#include "monitor/monitor_session.h"
#include "runtime/generate.h"

namespace plexus::bench {

namespace {

RunInputs run_inputs(const BenchConfig& c) {
  RunInputs in;
  in.engine.threads = static_cast<int>(c.backend.threads);
  in.engine.wait = parse_wait_policy(c.backend.wait).value_or(WaitPolicy::kAuto);  // checked when read
  in.micro_batch = static_cast<int>(c.backend.micro_batch);
  in.micro_batches = static_cast<int>(c.backend.micro_batches);
  PlanInputs& p = in.plan;
  p.strategy = c.backend.strategy;
  p.dtype = c.backend.dtype;
  p.quantize = c.backend.quantize;
  p.context = c.backend.context;
  p.context_given = c.backend.context_given;
  p.batch = c.scenario.batch_size;
  if (!c.backend.max_memory.empty()) {
    std::string text;
    for (const auto& [dev, size] : c.backend.max_memory) text += (text.empty() ? "" : ",") + dev + "=" + size;
    p.max_memory = text;
  }
  if (c.backend.virtual_devices > 0) p.virtual_devices = c.backend.virtual_devices;
  if (!c.backend.device_ids.empty()) p.devices = c.backend.device_ids;
  p.device_map_file = c.backend.device_map_file;
  p.tensor_parallel = c.backend.tensor_parallel;
  p.pipeline_parallel = c.backend.pipeline_parallel;
  p.expert_parallel = c.backend.expert_parallel;
  p.cpu_moe = c.backend.cpu_moe;
  p.n_cpu_moe = c.backend.n_cpu_moe;
  return in;
}

// The dtype a run of one host stage computes in: its checkpoint's (the head's weights, kept as
// stored even when the projections are quantised on load), else config.json's torch_dtype.
Json host_run_dtype(const ModelRun& run) {
  if (run.executor) return std::string(dtype_torch_name(run.executor->model().lm_head().dtype));
  const auto& t = run.runner->config().torch_dtype;
  return t ? Json(std::string(dtype_torch_name(*t))) : Json(nullptr);
}

Json single_engine_plan(const ModelRun& run) {
  return {{"strategy", nullptr},
          {"dtype", host_run_dtype(run)},
          {"device_map", {{"", "cpu"}}},
          {"devices", Json::array({{{"device", "cpu"}}})},
          {"notes", Json::array({"no devices named in backend: one engine on the host"})},
          {"budgets_source", "host"}};
}

Json execution_json(const ModelRun& run, const ExecStats* since) {
  Json j;
  if (run.planned() && since) {
    j = exec_stats_to_json(exec_stats_since(run.stats(), *since));
  } else {
    j = {{"devices", Json::array()}, {"stages", 1}, {"micro_batches", 1}, {"forward_wall_s", nullptr},
         {"busy_fraction_sum", nullptr}, {"streamed_bytes", 0}, {"stream_copy_s", 0}, {"stream_wait_s", 0}};
  }
  j["threads"] = run.threads;
  j["wait"] = std::string(wait_policy_name(run.wait));
  j["isa"] = run.isa;
  return j;
}

// The engine a result names: backend.engine, else the command's file name, else the backend type.
std::string engine_of(const BenchConfig& c) {
  if (c.backend.engine) return *c.backend.engine;
  if (c.backend.type == "command" && !c.backend.command.empty())
    return std::filesystem::path(c.backend.command.front()).filename().string();
  return c.backend.type;
}

}  // namespace

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool ensure_model(const BenchConfig& c, const std::string& config_file, const Log& log, const StopRequested& stop) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(c.model) / "config.json") || fs::is_regular_file(c.model)) return false;
  if (!c.model_make && !fs::exists(c.model) && looks_like_hub_id(c.model)) return false;  // run_point looks in the cache
  if (!c.model_make) {
    throw InputError(where_in_file(c, config_file, "model") + "model: '" + c.model +
                     "' holds no model (no config.json): make one with `plexus make-model`, or add model_make: {preset: tiny} "
                     "to the configuration to make it when missing");
  }
  const ModelMakeConfig& m = *c.model_make;
  MakeModelOptions o;
  o.preset = m.preset;
  o.arch = m.arch == "qwen2" ? Arch::kQwen2 : m.arch == "qwen3" ? Arch::kQwen3 : m.arch == "mistral" ? Arch::kMistral : Arch::kLlama;
  if (!parse_dtype(m.dtype, &o.dtype)) throw InputError(config_file + ": model_make.dtype: unknown dtype '" + m.dtype + "'");
  o.seed = m.seed;
  o.stop_requested = stop;
  const std::string& tokenizer = m.tokenizer;
  if (!tokenizer.empty() && !fs::exists(tokenizer)) {  // never a demo model quietly made without one
    throw InputError(where_in_file(c, config_file, "model_make.tokenizer") + "model_make.tokenizer: '" + tokenizer +
                     "' not found (a directory with tokenizer.json, or the file; relative paths are from the current "
                     "directory). Leave the key out to make a model without a tokenizer");
  }
  log("making the model in " + c.model + " (" + m.preset + " " + m.arch + " " + m.dtype + ", random weights, seed " +
      std::to_string(m.seed) + (tokenizer.empty() ? "" : ", tokenizer " + tokenizer) + ")");
  make_model_with_tokenizer(c.model, o, tokenizer);
  return true;
}

Json unmeasured_point(const BenchPoint& point, const std::string& status, const std::string& error) {
  Json r;
  r["name"] = point.config.name;
  r["engine"] = engine_of(point.config);
  r["timestamp"] = utc_timestamp();
  r["config"] = config_to_json(point.config);
  r["sweep_point"] = point.sweep_point;
  r["status"] = status;
  r["interrupted"] = status == "interrupted";
  r["error"] = error;
  return r;
}

Json run_point(const BenchPoint& point, const std::string& config_file, const Log& log, const StopRequested& stop) {
  const BenchConfig& c = point.config;
  // Other engines: a program under the monitor (bench/command_run.h).
  if (c.backend.type == "command") {
    return run_command_point(point, c.backend.command, engine_of(c), log, stop);
  }
  if (c.backend.type == "pytorch") {
    return run_command_point(point, pytorch_command(c, config_file), engine_of(c), log, stop);
  }
  if (c.backend.type == "openai") return run_openai_point(point, config_file, log, stop);
  auto stopping = [&] { return stop && stop(); };
  const ScenarioConfig& sc = c.scenario;
  ensure_model(c, config_file, log, stop);
  std::string model;
  try {
    model = locate_model(c.model, c.revision, ModelNeeds::kWeights);
  } catch (const InputError& e) {
    throw InputError(where_in_file(c, config_file, "model") + "model: " + e.what());
  }

  std::unique_ptr<ModelRun> run;
  try {
    run = open_model_run(run_inputs(c), model);
  } catch (const InputError& e) {
    // The planner speaks in command-line flags; name the configuration's keys instead.
    std::string m = e.what();
    const std::string sequences_key = key_as_written(c, "scenario.max_sequences", "scenario.batch_size");
    for (const auto& [flag, key] : {std::pair<std::string, std::string>{"--devices", "backend.device_ids"},
                                    {"--max-memory", "backend.max_memory"}, {"--virtual-devices N", "backend.virtual_devices"},
                                    {"--virtual-devices", "backend.virtual_devices"}, {"--dtype", "backend.dtype"}, {"--quantize", "backend.quantize"},
                                    {"--device-map", "backend.device_map"}, {"--context", "backend.context"},
                                    {"--micro-batches", "backend.micro_batches"}, {"--micro-batch", "backend.micro_batch"},
                                    {"--max-sequences", sequences_key}, {"--batch-tokens", "backend.batch_tokens"},
                                    {"--tensor-parallel", "backend.tensor_parallel"}, {"--pipeline-parallel", "backend.pipeline_parallel"},
                                    {"--tp/--pp", "backend.tensor_parallel/pipeline_parallel"}, {"--tp", "backend.tensor_parallel"},
                                    {"--pp", "backend.pipeline_parallel"}, {"--expert-parallel", "backend.expert_parallel"},
                                    {"--ep", "backend.expert_parallel"}, {"--n-cpu-moe", "backend.n_cpu_moe"},
                                    {"--cpu-moe", "backend.cpu_moe"}}) {
      for (std::size_t at = m.find(flag); at != std::string::npos; at = m.find(flag, at + key.size())) m.replace(at, flag.size(), key);
    }
    // "backend.device_ids: ..." or "backend.tensor_parallel 3 cannot ..." → "FILE:LINE: backend....".
    const std::string key = m.substr(0, m.find_first_of(" :"));
    const bool names_key = key.rfind("backend.", 0) == 0 || key.rfind("scenario.", 0) == 0;
    throw InputError((names_key ? where_in_file(c, config_file, key) : where_in_file(c, config_file, "backend")) + m);
  }
  if (stopping()) throw Interrupted("interrupted while opening the model, before any sample was measured");
  Runner& runner = *run->runner;
  std::unique_ptr<Tokenizer> tok;
  if (Tokenizer::exists_in(model)) tok = Tokenizer::load(model);
  std::vector<std::vector<std::int32_t>> prompts;
  try {
    prompts = scenario_prompts(sc, tok.get(), runner.vocab_size(), model);
  } catch (const InputError& e) {
    // "scenario.prompts_ids[0]: ..." gets the key's line; dataset errors already name DATASET:LINE.
    const std::string m = e.what();
    if (m.rfind("scenario.", 0) != 0) throw;
    throw InputError(where_in_file(c, config_file, m.substr(0, m.find_first_of("[:"))) + m);
  }
  for (const auto& p : prompts) {
    if (static_cast<std::int64_t>(p.size()) + sc.max_new_tokens > runner.max_context()) {
      const std::string key = key_as_written(c, "scenario.max_tokens", "scenario.max_new_tokens");
      throw InputError(where_in_file(c, config_file, key) + key + ": a prompt of " + std::to_string(p.size()) + " tokens + " +
                       std::to_string(sc.max_new_tokens) + " new tokens exceeds the model's context of " +
                       std::to_string(runner.max_context()));
    }
  }
  if (sc.batch_size > runner.max_batch_tokens()) {
    const std::string key = key_as_written(c, "scenario.max_sequences", "scenario.batch_size");
    throw InputError(where_in_file(c, config_file, key) + key + ": " + std::to_string(sc.batch_size) +
                     " sequences decode together but a forward pass holds " + std::to_string(runner.max_batch_tokens()) + " tokens");
  }
  const std::int64_t n = sc.num_samples > 0 ? sc.num_samples : static_cast<std::int64_t>(prompts.size());
  const auto measured = cycle_prompts(prompts, n);
  const auto warmup = cycle_prompts(prompts, sc.warmup_samples);

  GenerateOptions go;
  go.max_tokens = sc.max_new_tokens;
  set_temperature(go.sampling, sc.temperature);
  if (!sc.ignore_eos) go.stop_ids = end_of_sequence_ids(runner.config(), tok ? tok->eos_id() : std::nullopt);
  const std::size_t bs = static_cast<std::size_t>(sc.batch_size);
  DeviceTimeline device_timeline;
  // A planned run's executor counters, between forward passes as often as the monitor samples;
  // every run's forward passes timed on the monitor session's clock once it gives it (energy).
  SampledRunner sampled(runner, [&run] { return run->stats(); }, device_timeline, c.monitor.interval_ms / 1000.0);
  Runner& measured_runner = sampled;
  // Runs `list` in batches of batch_size; sample i samples with seed + i. Returns false when
  // stopped early.
  auto run_all = [&](const std::vector<std::vector<std::int32_t>>& list, RunTimings* timings) {
    for (std::size_t b = 0; b < list.size(); b += bs) {
      if (stopping()) return false;
      const std::vector<std::vector<std::int32_t>> batch(list.begin() + static_cast<std::ptrdiff_t>(b),
                                                         list.begin() + static_cast<std::ptrdiff_t>(std::min(list.size(), b + bs)));
      GenerateOptions o = go;
      o.sampling.seed = sc.seed + b;
      const BatchGenerateResult r = generate_batch(measured_runner, batch, o);
      if (!timings) continue;
      timings->decode_s += r.decode_s;
      timings->steps += r.steps;
      for (const GenerateResult& g : r.sequences) {
        timings->samples.push_back({g.prompt_tokens, static_cast<std::int64_t>(g.ids.size()), g.ttft_ms, g.e2e_ms});
      }
    }
    return true;
  };

  if (!warmup.empty()) log("warm-up: " + std::to_string(warmup.size()) + " sample(s), not measured");
  if (!run_all(warmup, nullptr)) throw Interrupted("interrupted during the warm-up, before any sample was measured");

  const ExecStats before = run->planned() ? run->stats() : ExecStats{};
  SourceOptions so = source_options_for_run(device_options_from_env(), c.backend.device_ids.empty() ? run->cuda_gpus : std::vector<int>{});
  for (long long id : c.backend.device_ids) so.devices.push_back(static_cast<int>(id));
  MonitorSession session(make_sources(so));
  MonitorOptions mo;
  mo.interval_ms = c.monitor.interval_ms;
  mo.idle_baseline_s = c.monitor.load_idle_baseline_s();
  if (c.monitor.idle_baseline_s > 0) log("measuring the idle baseline for " + std::to_string(mo.idle_baseline_s) + " s");
  session.start(mo);
  sampled.time_forwards([&session] { return session.now_s(); });
  log("measuring: " + std::to_string(measured.size()) + " sample(s), batch size " + std::to_string(sc.batch_size) + ", " +
      std::to_string(sc.max_new_tokens) + " new tokens each");
  const std::string timestamp = utc_timestamp();
  RunTimings timings;
  const auto t0 = std::chrono::steady_clock::now();
  if (run->planned()) device_timeline.start(run->stats());
  const bool complete = run_all(measured, &timings);
  // The end of the run, unless a point was just taken (a sliver of an interval says nothing).
  if (run->planned() && device_timeline.due(c.monitor.interval_ms / 2000.0)) device_timeline.add(run->stats());
  timings.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const MonitorSummary summary = session.stop();
  if (!complete && timings.samples.empty()) throw Interrupted("interrupted before any sample was measured");
  if (!complete) log("interrupted: keeping the " + std::to_string(timings.samples.size()) + " sample(s) measured so far");

  std::int64_t output_tokens = 0;
  for (const SampleTiming& s : timings.samples) output_tokens += s.output_tokens;

  Json result;
  result["name"] = c.name;
  result["engine"] = engine_of(c);
  result["timestamp"] = timestamp;
  result["config"] = config_to_json(c);
  Json used = Json::array();
  Json plan = run->plan_json.is_null() ? single_engine_plan(*run) : run->plan_json;
  // A tensor-parallel plan is one rank's: rank r of device d computes on the run's device d·tp + r.
  const int tp = plan.contains("tensor_parallel") && plan["tensor_parallel"].is_number_integer() ? plan["tensor_parallel"].get<int>() : 1;
  for (const Json& d : plan["devices"]) {
    if (!d.contains("device") || !d["device"].is_number_integer()) continue;
    for (int r = 0; r < tp; ++r) used.push_back(d["device"].get<int>() * tp + r);
  }
  result["config"]["device_ids"] = used;
  result["sweep_point"] = point.sweep_point;
  result["status"] = complete ? "ok" : "interrupted";
  result["interrupted"] = !complete;
  result["throughput"] = throughput_json(timings);
  result["latency"] = latency_json(timings);
  const WindowEnergy forwards = energy_in_windows(session.samples(), sampled.forwards());
  result["energy"] = energy_json(summary, output_tokens, &forwards);
  {  // The cost model's prediction for this run, beside what was measured (docs/planner.md).
    double prompt = 0;
    for (const auto& p : measured) prompt += static_cast<double>(p.size());
    prompt /= static_cast<double>(std::max<std::size_t>(1, measured.size()));
    result["predicted"] = predict_run(*run, model, prompt, prompt + static_cast<double>(sc.max_new_tokens) / 2, sc.batch_size);
  }
  add_monitor_results(result, summary, session.unavailable(), c.monitor.interval_ms);
  result["plan"] = plan;
  result["execution"] = execution_json(*run, run->planned() ? &before : nullptr);
  result["environment"] = environment_json();
  Json requests = Json::array();
  for (const SampleTiming& s : timings.samples) {
    requests.push_back({{"prompt_tokens", s.prompt_tokens}, {"output_tokens", s.output_tokens}, {"ttft_ms", s.ttft_ms}, {"e2e_ms", s.e2e_ms}});
  }
  result["requests"] = requests;
  result["timeline"] = timeline_json(session.samples());
  result["device_timeline"] = device_timeline.to_json();
  return result;
}

}  // namespace plexus::bench

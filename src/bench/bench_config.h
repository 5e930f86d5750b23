// A benchmark configuration: the typed values of one run (one sweep point), read from YAML with
// the key path and line of every error, and echoed back as JSON in every result.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "bench/openai_config.h"
#include "core/json.h"

namespace plexus::bench {

// How to make the model when its directory has no config.json (`plexus make-model`).
struct ModelMakeConfig {
  std::string preset = "small";  // tiny | small | llama-3.2-1b | llama-3.1-8b
  std::string arch = "llama";    // llama | qwen2 | qwen3 | mistral
  std::string dtype = "bf16";    // f32 | bf16 | f16
  std::uint64_t seed = 1;
  std::string tokenizer;         // directory with tokenizer.json to copy ("" = none)
};

struct BackendConfig {
  std::string type = "plexus";  // plexus | command | pytorch (docs/benchmarks.md)
  std::vector<long long> device_ids;  // GPUs (monitored, and planned on); empty = all / none
  long long virtual_devices = 0;      // > 0: N virtual CPU devices splitting the host
  std::string strategy = "stages";    // device_map given as a strategy name
  std::optional<std::string> device_map_file;  // device_map given as a JSON file path
  std::vector<std::pair<std::string, std::string>> max_memory;  // device → size, in file order
  std::optional<std::string> dtype;
  std::optional<std::string> quantize;  // quantise on load: a named mix, Q4_K_M ... (as --quantize)
  long long threads = 0;              // 0: every hardware thread
  std::string wait = "auto";          // the CPU pool's wait policy: spin | passive | auto
  long long context = 4096;           // KV cache the plan keeps room for
  bool context_given = false;         // in the file (or --set): beyond the model's positions, noted
  long long micro_batch = 0;          // sequences per micro-batch on several devices (--micro-batch); 0: micro_batches
  long long micro_batches = 0;        // their number, the old key (--micro-batches); 0: one per stage
  long long tensor_parallel = 1;      // every layer split over this many devices (--tp)
  long long pipeline_parallel = 1;    // the layers in this many stages of such groups (--pp)
  long long expert_parallel = 1;      // a group of this many devices holding a mixture's experts whole (--ep)
  bool cpu_moe = false;               // every layer's experts in host memory, computed there (--cpu-moe)
  std::optional<long long> n_cpu_moe; // the first N layers' experts only (--n-cpu-moe N)
  // type: command — any program run under the monitor (argv, no shell); its tokens come from the
  // {"plexus_tokens": {...}} lines it prints (bench/command_run.h). `engine`: its name in reports
  // (default: the command's file name).
  std::vector<std::string> command;
  std::optional<std::string> engine;
  // type: pytorch — the energy-benchmark suite's key (with device_ids, device_map, max_memory):
  // scripts/hf_runner.py runs the model with transformers.
  std::optional<std::string> torch_dtype;
  // Devices are named, or implied by tensor/pipeline parallelism: the run is planned and executed
  // across them (else one engine).
  bool plans() const {
    return !device_ids.empty() || virtual_devices > 0 || device_map_file || !max_memory.empty() || tensor_parallel > 1 ||
           pipeline_parallel > 1 || expert_parallel > 1;
  }
};

struct ScenarioConfig {
  std::string dataset;                             // JSONL file: {"prompt": TEXT} or {"ids": [...]}
  std::vector<std::string> prompts;
  std::vector<std::vector<std::int32_t>> prompts_ids;
  long long num_samples = 0;                       // 0: one per prompt
  long long batch_size = 1;        // max_sequences (old name batch_size): sequences in flight
  long long max_new_tokens = 32;   // max_tokens (old name max_new_tokens): tokens to generate per sample
  long long warmup_samples = 1;
  std::uint64_t seed = 0;
  double temperature = 0;                          // 0: greedy
  bool ignore_eos = true;
};

struct MonitorConfig {
  double interval_ms = 100;
  double idle_baseline_s = 0;
  // The idle power measured before a load: idle_baseline_s when given, else 5 sampling intervals,
  // at most 5 s.
  double load_idle_baseline_s() const { return idle_baseline_s > 0 ? idle_baseline_s : std::min(5.0, 5 * interval_ms / 1000.0); }
};

struct OutputConfig {
  std::string dir = "bench-results";
  std::vector<std::string> formats = {"json", "csv", "html"};
};

struct BenchConfig {
  std::string name;
  std::string model;                    // a directory, a .gguf file or a Hugging Face id in the local cache
  std::optional<std::string> revision;  // of a Hugging Face id (default main)
  std::optional<ModelMakeConfig> model_make;
  BackendConfig backend;
  OpenAiConfig openai;                  // backend.type openai: the server and the load
  ScenarioConfig scenario;
  MonitorConfig monitor;
  OutputConfig output;
  std::map<std::string, int> lines;  // key path → 1-based line in the file, for run-time errors
};

// Where errors point: the YAML file, and the key paths that came from --set (no line of their own).
struct ConfigSource {
  std::string file;
  std::vector<std::string> overridden;  // dotted paths set by --set
};

// Reads a configuration tree (without `sweep`). InputError "FILE:LINE: key.path: reason" (or
// "--set key.path: reason") for unknown keys, wrong types and bad values.
BenchConfig config_from_yaml(const YAML::Node& root, const ConfigSource& source);

// "FILE:LINE: " for a key path read from the file (the nearest enclosing key that has a line),
// else "FILE: ".
std::string where_in_file(const BenchConfig& config, const std::string& file, const std::string& path);

// A renamed key's path as the configuration spelled it: `old` ("scenario.batch_size") when the
// file used the old name, else `name` ("scenario.max_sequences").
std::string key_as_written(const BenchConfig& config, const std::string& name, const std::string& old);

// The configuration as JSON, every key present (null where unset). Result files keep the names
// they always had (scenario.batch_size, scenario.max_new_tokens), so older results compare.
Json config_to_json(const BenchConfig& config);

}  // namespace plexus::bench

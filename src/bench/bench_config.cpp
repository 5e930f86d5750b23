// YAML → BenchConfig, checking every key: unknown keys, types and ranges fail with the file, the
// line and the dotted key path.
#include "bench/bench_config.h"

#include <algorithm>
#include <filesystem>

#include "bench/config_paths.h"
#include "bench/http_client.h"
#include "core/args.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "core/units.h"
#include "model/make_model.h"
#include "planner/budgets.h"
#include "model/quant_policy.h"
#include "planner/weight_dtype.h"
#include "runtime/sampler.h"

namespace plexus::bench {

namespace {

const std::vector<std::string> kStrategies = {"stages", "sequential", "balanced", "balanced_low_0", "auto"};

// Reads values out of one tree, throwing errors that say where.
class Reader {
 public:
  explicit Reader(const ConfigSource& source) : source_(source) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& path, const std::string& reason) const {
    throw InputError(where(node, path) + reason);
  }

  std::string where(const YAML::Node& node, const std::string& path) const {
    for (const std::string& o : source_.overridden) {
      if (path == o || path.rfind(o + ".", 0) == 0) return "--set " + path + ": ";
    }
    const YAML::Mark mark = node.Mark();
    if (mark.is_null() || mark.line < 0) return source_.file + ": " + path + ": ";
    return source_.file + ":" + std::to_string(mark.line + 1) + ": " + path + ": ";
  }

  // Fails on keys outside `allowed`, suggesting the nearest one.
  void check_keys(const YAML::Node& map, const std::string& prefix, const std::vector<std::string>& allowed) const {
    if (!map.IsMap()) fail(map, prefix, "expected a mapping of keys (" + join(allowed) + ")");
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      std::string hint;
      if (const std::string near = nearest_key(key, allowed); !near.empty()) hint = " (did you mean '" + near + "'?)";
      fail(it->first, path, "unknown key" + hint + "; known keys: " + join(allowed));
    }
  }

  // Runs a shared check (one function for the flag and the key) that throws InputError
  // "NAMED: reason" (`named`: the name it was given, by default the key path), and fails at this
  // node with its reason.
  template <typename F>
  void check(const YAML::Node& n, const std::string& path, F f, const std::string& named = "") const {
    try {
      f();
    } catch (const InputError& e) {
      std::string reason = e.what();
      const std::string prefix = (named.empty() ? path : named) + ": ";
      if (reason.rfind(prefix, 0) == 0) reason.erase(0, prefix.size());
      fail(n, path, reason);
    }
  }

  std::string string(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) fail(n, path, "expected a string, got " + kind(n));
    return n.Scalar();
  }

  long long integer(const YAML::Node& n, const std::string& path, long long lo, long long hi) const {
    if (!n.IsScalar()) fail(n, path, "expected an integer, got " + kind(n));
    long long v = 0;
    try {
      v = n.as<long long>();
    } catch (const YAML::Exception&) {
      fail(n, path, "expected an integer, got '" + n.Scalar() + "'");
    }
    if (v < lo || v > hi) {
      fail(n, path, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + std::to_string(v));
    }
    return v;
  }

  double number(const YAML::Node& n, const std::string& path, double lo, double hi) const {
    if (!n.IsScalar()) fail(n, path, "expected a number, got " + kind(n));
    double v = 0;
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      fail(n, path, "expected a number, got '" + n.Scalar() + "'");
    }
    if (!(v >= lo && v <= hi)) fail(n, path, "must be between " + fmt(lo) + " and " + fmt(hi) + ", got " + n.Scalar());
    return v;
  }

  bool boolean(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) fail(n, path, "expected true or false, got " + kind(n));
    try {
      return n.as<bool>();
    } catch (const YAML::Exception&) {
      fail(n, path, "expected true or false, got '" + n.Scalar() + "'");
    }
  }

  // A list of integers: a YAML sequence, one integer, or "0,1" (as --set writes it).
  std::vector<long long> int_list(const YAML::Node& n, const std::string& path, long long lo, long long hi) const {
    std::vector<long long> out;
    if (n.IsSequence()) {
      for (std::size_t i = 0; i < n.size(); ++i) out.push_back(integer(n[i], path + "[" + std::to_string(i) + "]", lo, hi));
      return out;
    }
    if (!n.IsScalar()) fail(n, path, "expected a list of integers, got " + kind(n));
    std::string text = n.Scalar();
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      const std::string item = text.substr(start, comma - start);
      try {  // a YAML error inside the value is this value's error, with its line
        const YAML::Node one = YAML::Load(item.empty() ? std::string("''") : item);
        out.push_back(one.as<long long>());
      } catch (const YAML::Exception&) {
        fail(n, path, "expected a list of integers, got '" + text + "'");
      }
      if (out.back() < lo || out.back() > hi) {
        fail(n, path, "must hold integers between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + text);
      }
      start = comma + 1;
    }
    return out;
  }

  std::vector<std::string> string_list(const YAML::Node& n, const std::string& path) const {
    std::vector<std::string> out;
    if (n.IsSequence()) {
      for (std::size_t i = 0; i < n.size(); ++i) out.push_back(string(n[i], path + "[" + std::to_string(i) + "]"));
      return out;
    }
    if (!n.IsScalar()) fail(n, path, "expected a list of strings, got " + kind(n));
    std::string text = n.Scalar();
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      out.push_back(text.substr(start, comma - start));
      start = comma + 1;
    }
    return out;
  }

  static std::string kind(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Null: return "nothing (null)";
      case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
      case YAML::NodeType::Sequence: return "a list";
      case YAML::NodeType::Map: return "a mapping";
      case YAML::NodeType::Undefined: return "nothing";
    }
    return "?";
  }
  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  }
  static std::string fmt(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

 private:
  const ConfigSource& source_;
};

// Parses ALL children of a map with per-key handlers; `read(key, node, path)`.
template <typename F>
void each(const YAML::Node& map, const std::string& prefix, F read) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    read(key, it->second, prefix + "." + key);
  }
}

void read_model_make(const Reader& r, const YAML::Node& n, ModelMakeConfig& m) {
  if (n.IsNull()) return;  // `model_make:` alone: every default
  r.check_keys(n, "model_make", {"preset", "arch", "dtype", "seed", "tokenizer"});
  each(n, "model_make", [&](const std::string& k, const YAML::Node& v, const std::string& p) {
    if (k == "preset") {
      m.preset = r.string(v, p);
      const std::vector<std::string> presets = preset_names();
      if (std::find(presets.begin(), presets.end(), m.preset) == presets.end()) {
        r.fail(v, p, "unknown preset '" + m.preset + "' (use " + preset_list() + ")");
      }
    } else if (k == "arch") {
      m.arch = r.string(v, p);
      if (m.arch != "llama" && m.arch != "qwen2" && m.arch != "qwen3" && m.arch != "mistral") {
        r.fail(v, p, "unknown architecture '" + m.arch + "' (use llama, qwen2, qwen3 or mistral)");
      }
    } else if (k == "dtype") {
      m.dtype = r.string(v, p);
      if (m.dtype != "f32" && m.dtype != "bf16" && m.dtype != "f16") r.fail(v, p, "unknown dtype '" + m.dtype + "' (use f32, bf16 or f16)");
    } else if (k == "seed") {
      m.seed = static_cast<std::uint64_t>(r.integer(v, p, 0, (1LL << 62)));
    } else if (k == "tokenizer") {
      m.tokenizer = r.string(v, p);
    }
  });
}

void read_backend(const Reader& r, const YAML::Node& n, BackendConfig& b) {
  r.check_keys(n, "backend", {"type", "device_ids", "virtual_devices", "device_map", "max_memory", "dtype", "quantize", "threads", "wait",
                              "context", "micro_batch", "micro_batches", "tensor_parallel", "pipeline_parallel",
                              "expert_parallel", "cpu_moe", "n_cpu_moe", "command", "engine", "torch_dtype"});
  each(n, "backend", [&](const std::string& k, const YAML::Node& v, const std::string& p) {
    if (k == "type") {
      b.type = r.string(v, p);
      if (b.type != "plexus" && b.type != "command" && b.type != "pytorch")
        r.fail(v, p, "unknown backend type '" + b.type + "' (use plexus, command, pytorch, or openai: any OpenAI-compatible server)");
    } else if (k == "device_ids") {
      b.device_ids = r.int_list(v, p, 0, kMaxDeviceNumber);
      r.check(v, p, [&] { check_device_numbers(b.device_ids, p); });
    } else if (k == "virtual_devices") {
      b.virtual_devices = r.integer(v, p, 0, 1024);
    } else if (k == "device_map") {
      const std::string s = r.string(v, p);
      if (std::find(kStrategies.begin(), kStrategies.end(), s) != kStrategies.end()) {
        b.strategy = s;
      } else if (std::filesystem::is_regular_file(s)) {
        b.device_map_file = s;
      } else {
        r.fail(v, p, "'" + s + "' is neither a strategy (" + Reader::join(kStrategies) + ") nor an existing device map file");
      }
    } else if (k == "max_memory") {
      if (!v.IsMap()) r.fail(v, p, "expected a mapping of device to size, e.g. {0: 10GiB, cpu: 64GiB}");
      std::string text;
      for (auto it = v.begin(); it != v.end(); ++it) {
        const std::string dev = it->first.Scalar();
        const std::string kp = p + "." + dev;
        const std::string size = r.string(it->second, kp);
        r.check(it->second, kp, [&] { parse_max_memory(dev + "=" + size); }, "--max-memory");
        b.max_memory.emplace_back(dev, size);
      }
    } else if (k == "dtype") {
      b.dtype = r.string(v, p);
      r.check(v, p, [&] { parse_weight_dtype_or_throw(*b.dtype, p); });
    } else if (k == "quantize") {
      b.quantize = r.string(v, p);
      r.check(v, p, [&] { quantize_flag(p, *b.quantize); });
    } else if (k == "threads") {
      b.threads = r.integer(v, p, 0, 1024);
    } else if (k == "wait") {
      b.wait = r.string(v, p);
      if (!parse_wait_policy(b.wait)) r.fail(v, p, "unknown wait policy '" + b.wait + "' (use " + std::string(kWaitPolicyChoices) + ")");
    } else if (k == "context") {
      b.context = r.integer(v, p, 0, 1LL << 24);
      b.context_given = true;
    } else if (k == "micro_batch") {
      b.micro_batch = r.integer(v, p, 0, 65536);
    } else if (k == "micro_batches") {
      b.micro_batches = r.integer(v, p, 0, 4096);
    } else if (k == "tensor_parallel") {
      b.tensor_parallel = r.integer(v, p, 1, 4096);
    } else if (k == "pipeline_parallel") {
      b.pipeline_parallel = r.integer(v, p, 1, 4096);
    } else if (k == "expert_parallel") {
      b.expert_parallel = r.integer(v, p, 1, 4096);
    } else if (k == "cpu_moe") {
      b.cpu_moe = r.boolean(v, p);
    } else if (k == "n_cpu_moe") {
      b.n_cpu_moe = r.integer(v, p, 0, 1LL << 20);
    } else if (k == "command") {
      if (!v.IsSequence()) r.fail(v, p, "expected a list: the program and its arguments as given (no shell), e.g. [sh, -c, 'echo hi']");
      b.command = r.string_list(v, p);
      if (b.command.empty() || b.command.front().empty()) r.fail(v, p, "give the program and its arguments, e.g. [python3, run.py, --n, 8]");
    } else if (k == "engine") {
      b.engine = r.string(v, p);
      if (b.engine->empty()) r.fail(v, p, "is empty: name the engine as reports should show it");
    } else if (k == "torch_dtype") {
      b.torch_dtype = r.string(v, p);
      if (*b.torch_dtype != "auto" && *b.torch_dtype != "float32" && *b.torch_dtype != "float16" && *b.torch_dtype != "bfloat16")
        r.fail(v, p, "unknown torch_dtype '" + *b.torch_dtype + "' (use auto, float32, float16 or bfloat16)");
    }
  });
  // The keys of one backend type given to another: said, not ignored.
  if (b.type == "command" && b.command.empty()) r.fail(n, "backend.command", "missing: backend.type command runs backend.command (a list: program and arguments)");
  if (b.type != "command" && n["command"]) r.fail(n["command"], "backend.command", "is for backend.type command (this backend is " + b.type + ")");
  if (b.type != "pytorch" && n["torch_dtype"]) r.fail(n["torch_dtype"], "backend.torch_dtype", "is for backend.type pytorch (use backend.dtype with plexus)");
  if (b.type == "pytorch" && b.strategy == "stages" && n["device_map"])
    r.fail(n["device_map"], "backend.device_map", "stages is plexus's own strategy: give auto, balanced, balanced_low_0 or sequential");
  if (n["micro_batch"] && n["micro_batches"]) {
    r.fail(n["micro_batches"], "backend.micro_batches", "and backend.micro_batch say the same thing (sequences per micro-batch, "
                                                        "or their number: the old key): give micro_batch");
  }
  if (b.virtual_devices > 0 && !b.max_memory.empty()) {
    r.fail(n["virtual_devices"], "backend.virtual_devices", "virtual_devices and max_memory both set budgets: give one of them");
  }
}

// `extra_keys` are read by the caller (an openai backend's load keys); `extra_sources` counts the
// prompt sources among them.
void read_scenario(const Reader& r, const YAML::Node& n, ScenarioConfig& s, std::vector<std::string> extra_keys = {},
                   int extra_sources = 0) {
  std::vector<std::string> keys = {"dataset", "prompts", "prompts_ids", "num_samples", "max_sequences", "batch_size", "max_tokens",
                                   "max_new_tokens", "warmup_samples", "seed", "temperature", "ignore_eos"};
  keys.insert(keys.end(), extra_keys.begin(), extra_keys.end());
  r.check_keys(n, "scenario", keys);
  for (const auto& [name, old] : {std::pair<const char*, const char*>{"max_sequences", "batch_size"}, {"max_tokens", "max_new_tokens"}}) {
    if (n[name] && n[old]) {
      r.fail(n[old], std::string("scenario.") + old,
             std::string("is the old name of scenario.") + name + ", which is given too: give " + name);
    }
  }
  int sources = extra_sources;
  each(n, "scenario", [&](const std::string& k, const YAML::Node& v, const std::string& p) {
    if (v.IsNull() && (k == "dataset" || k == "prompts" || k == "prompts_ids")) return;  // `key: null` = not given
    if (k == "dataset") {
      s.dataset = r.string(v, p);
      if (!std::filesystem::is_regular_file(s.dataset)) r.fail(v, p, "no such file '" + s.dataset + "'");
      ++sources;
    } else if (k == "prompts") {
      s.prompts = r.string_list(v, p);
      if (s.prompts.empty()) r.fail(v, p, "the list is empty");
      ++sources;
    } else if (k == "prompts_ids") {
      if (!v.IsSequence() || v.size() == 0) r.fail(v, p, "expected a non-empty list of token id lists, e.g. [[1, 415, 5565]]");
      for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string ip = p + "[" + std::to_string(i) + "]";
        std::vector<std::int32_t> ids;
        for (long long id : r.int_list(v[i], ip, 0, 2147483647)) ids.push_back(static_cast<std::int32_t>(id));
        if (ids.empty()) r.fail(v[i], ip, "a prompt needs at least one token id");
        s.prompts_ids.push_back(std::move(ids));
      }
      ++sources;
    } else if (k == "num_samples") {
      s.num_samples = r.integer(v, p, 1, 1000000);
    } else if (k == "max_sequences" || k == "batch_size") {
      s.batch_size = r.integer(v, p, 1, 256);
    } else if (k == "max_tokens" || k == "max_new_tokens") {
      s.max_new_tokens = r.integer(v, p, 1, kMaxNewTokens);
    } else if (k == "warmup_samples") {
      s.warmup_samples = r.integer(v, p, 0, 1000000);
    } else if (k == "seed") {
      s.seed = static_cast<std::uint64_t>(r.integer(v, p, 0, (1LL << 62)));
    } else if (k == "temperature") {
      s.temperature = r.number(v, p, 0, kMaxTemperature);
    } else if (k == "ignore_eos") {
      s.ignore_eos = r.boolean(v, p);
    }
  });
  if (sources != 1) {
    const std::string choices = extra_keys.empty() ? "dataset, prompts or prompts_ids" : "dataset, prompts, prompts_ids or random";
    r.fail(n, "scenario", sources == 0 ? "give the prompts: one of " + choices : "give only one of " + choices);
  }
}

// backend.type openai: the server's URL, model, key, endpoint and the tokenizer that counts tokens.
void read_openai_backend(const Reader& r, const YAML::Node& n, BackendConfig& b, OpenAiConfig& o) {
  r.check_keys(n, "backend", {"type", "url", "model", "api_key", "endpoint", "tokenizer", "timeout_s", "device_ids"});
  b.type = "openai";
  each(n, "backend", [&](const std::string& k, const YAML::Node& v, const std::string& p) {
    if (k == "url") {
      o.url = r.string(v, p);
      r.check(v, p, [&] { parse_http_url(o.url, p); });
    } else if (k == "model") {
      o.model = r.string(v, p);
    } else if (k == "api_key") {
      o.api_key = r.string(v, p);
    } else if (k == "endpoint") {
      o.endpoint = r.string(v, p);
      if (o.endpoint != "completions" && o.endpoint != "chat") {
        r.fail(v, p, "unknown endpoint '" + o.endpoint + "' (use completions: /v1/completions, or chat: /v1/chat/completions)");
      }
    } else if (k == "tokenizer") {
      o.tokenizer = r.string(v, p);
      if (!std::filesystem::exists(o.tokenizer)) r.fail(v, p, "'" + o.tokenizer + "' not found (a directory with tokenizer.json, or the file)");
    } else if (k == "timeout_s") {
      o.timeout_s = r.number(v, p, 0.001, 86400);
    } else if (k == "device_ids") {
      b.device_ids = r.int_list(v, p, 0, kMaxDeviceNumber);
      r.check(v, p, [&] { check_device_numbers(b.device_ids, p); });
    }
  });
  if (o.url.empty()) r.fail(n, "backend.url", "missing: the server's address, e.g. http://127.0.0.1:8000");
}

// The scenario of an openai backend: the usual prompts and shape, and the load's keys.
void read_openai_scenario(const Reader& r, const YAML::Node& n, ScenarioConfig& s, OpenAiConfig& o) {
  if (!n.IsMap()) r.fail(n, "scenario", "expected a mapping of keys");
  for (const char* k : {"max_sequences", "batch_size"}) {
    if (n[k]) r.fail(n[k], std::string("scenario.") + k, "an openai backend sends requests: give scenario.concurrency (clients) instead");
  }
  each(n, "scenario", [&](const std::string& k, const YAML::Node& v, const std::string& p) {
    if (k == "concurrency") {
      o.concurrency = r.integer(v, p, 0, 100000);
    } else if (k == "request_rate") {
      if (!v.IsNull()) o.request_rate = r.number(v, p, 1e-6, 1e9);
    } else if (k == "burstiness") {
      o.burstiness = r.number(v, p, 1e-3, 1e3);
    } else if (k == "random") {
      if (v.IsNull()) return;
      r.check_keys(v, p, {"input_tokens", "output_tokens", "range_ratio", "distribution"});
      RandomLengths& rl = o.random.emplace();
      each(v, p, [&](const std::string& rk, const YAML::Node& rv, const std::string& rp) {
        if (rk == "input_tokens") rl.input_tokens = r.integer(rv, rp, 1, 1 << 20);
        if (rk == "output_tokens") rl.output_tokens = r.integer(rv, rp, 1, kMaxNewTokens);
        if (rk == "range_ratio") rl.range_ratio = r.number(rv, rp, 0, 1);
        if (rk == "distribution") {
          rl.distribution = r.string(rv, rp);
          if (rl.distribution != "uniform" && rl.distribution != "normal" && rl.distribution != "exponential") {
            r.fail(rv, rp, "unknown distribution '" + rl.distribution + "' (use uniform, normal or exponential)");
          }
        }
      });
    } else if (k == "slo") {
      if (v.IsNull()) return;
      r.check_keys(v, p, {"ttft_ms", "tpot_ms", "e2e_ms"});
      each(v, p, [&](const std::string& sk, const YAML::Node& sv, const std::string& sp) {
        const double ms = r.number(sv, sp, 0, 1e9);
        (sk == "ttft_ms" ? o.slo.ttft_ms : sk == "tpot_ms" ? o.slo.tpot_ms : o.slo.e2e_ms) = ms;
      });
    }
  });
  if (o.concurrency == 0 && !o.request_rate) {
    r.fail(n["concurrency"], "scenario.concurrency", "0 (no limit) needs scenario.request_rate: a closed loop needs at least one client");
  }
  read_scenario(r, n, s, {"concurrency", "request_rate", "burstiness", "random", "slo"}, o.random ? 1 : 0);
}

bool is_openai(const YAML::Node& root) {
  const YAML::Node b = root["backend"];
  return b && b.IsMap() && b["type"] && b["type"].IsScalar() && b["type"].Scalar() == "openai";
}

void read_monitor(const Reader& r, const YAML::Node& n, MonitorConfig& m) {
  r.check_keys(n, "monitor", {"interval_ms", "idle_baseline_s"});
  each(n, "monitor", [&](const std::string& k, const YAML::Node& v, const std::string& p) {
    if (k == "interval_ms") m.interval_ms = r.number(v, p, 1, 60000);
    if (k == "idle_baseline_s") m.idle_baseline_s = r.number(v, p, 0, 3600);
  });
}

void read_output(const Reader& r, const YAML::Node& n, OutputConfig& o) {
  r.check_keys(n, "output", {"dir", "formats"});
  each(n, "output", [&](const std::string& k, const YAML::Node& v, const std::string& p) {
    if (k == "dir") {
      o.dir = r.string(v, p);
      if (o.dir.empty()) r.fail(v, p, "the directory is empty");
    } else if (k == "formats") {
      o.formats = r.string_list(v, p);
      if (o.formats.empty()) r.fail(v, p, "name at least one of json, csv, html");
      std::vector<std::string> seen;
      for (const std::string& f : o.formats) {
        if (f != "json" && f != "csv" && f != "html") r.fail(v, p, "unknown format '" + f + "' (use json, csv, html)");
        if (std::find(seen.begin(), seen.end(), f) != seen.end()) r.fail(v, p, "format '" + f + "' is listed twice");
        seen.push_back(f);
      }
    }
  });
}

// Every key's line, by dotted path (only keys that came from the file have one).
void record_lines(const YAML::Node& map, const std::string& prefix, std::map<std::string, int>& lines) {
  if (!map.IsMap()) return;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string path = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    if (!it->first.Mark().is_null() && it->first.Mark().line >= 0) lines[path] = it->first.Mark().line + 1;
    record_lines(it->second, path, lines);
  }
}

}  // namespace

std::string key_as_written(const BenchConfig& c, const std::string& name, const std::string& old) {
  return c.lines.count(old) ? old : name;
}

std::string where_in_file(const BenchConfig& c, const std::string& file, const std::string& path) {
  for (std::string p = path;;) {
    if (const auto it = c.lines.find(p); it != c.lines.end()) return file + ":" + std::to_string(it->second) + ": ";
    const std::size_t dot = p.rfind('.');
    if (dot == std::string::npos) return file + ": ";
    p.resize(dot);
  }
}

BenchConfig config_from_yaml(const YAML::Node& root, const ConfigSource& source) {
  const Reader r(source);
  if (!root.IsMap()) r.fail(root, "(top level)", "expected a mapping with name, model, backend, scenario, ...");
  r.check_keys(root, "", {"name", "model", "revision", "model_make", "backend", "scenario", "monitor", "output", "sweep"});
  BenchConfig c;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it->second.IsNull() && it->first.Scalar() == "scenario") {
      r.fail(it->first, "scenario", "is empty: give the prompts (dataset, prompts or prompts_ids) and the run's shape");
    }
  }
  each(root, "", [&](const std::string& k, const YAML::Node& v, const std::string&) {
    if (v.IsNull() && (k == "backend" || k == "monitor" || k == "output")) return;  // `backend:` alone: defaults
    if (k == "name") {
      c.name = r.string(v, k);
      if (c.name.empty() || c.name.find_first_of("/\\") != std::string::npos || c.name == "." || c.name == "..") {
        r.fail(v, k, "must be a non-empty file name (no '/'), got '" + c.name + "'");
      }
    } else if (k == "model") {
      c.model = r.string(v, k);
      if (c.model.empty()) r.fail(v, k, "the model directory is empty");
    } else if (k == "revision") {
      c.revision = r.string(v, k);
      if (c.revision->empty()) r.fail(v, k, "is empty: give a branch, tag or commit of the Hugging Face id in model");
    } else if (k == "model_make") {
      c.model_make.emplace();
      read_model_make(r, v, *c.model_make);
    } else if (k == "backend") {
      if (is_openai(root)) read_openai_backend(r, v, c.backend, c.openai);
      else read_backend(r, v, c.backend);
    } else if (k == "scenario") {
      if (is_openai(root)) read_openai_scenario(r, v, c.scenario, c.openai);
      else read_scenario(r, v, c.scenario);
    } else if (k == "monitor") {
      read_monitor(r, v, c.monitor);
    } else if (k == "output") {
      read_output(r, v, c.output);
    }
  });
  const bool runs_command = c.backend.type == "command";  // its own program: no model, no prompts
  if (c.model.empty() && is_openai(root)) c.model = c.openai.model.empty() ? c.openai.url : c.openai.model;  // for reports
  if (c.model.empty() && !runs_command) r.fail(root, "model", "missing: name the model directory (config.json + safetensors)");
  if (!root["scenario"] && !runs_command) r.fail(root, "scenario", "missing: give the prompts (dataset, prompts or prompts_ids) and the run's shape");
  if (root["scenario"] && runs_command) r.fail(root["scenario"], "scenario", "backend.type command runs its command as given: leave scenario out (the command's arguments say what it does)");
  record_lines(root, "", c.lines);
  for (const std::string& o : source.overridden) c.lines.erase(o);  // --set values have no line
  if (c.name.empty()) c.name = std::filesystem::path(source.file).stem().string();
  if (c.name.empty()) c.name = "bench";
  return c;
}

Json config_to_json(const BenchConfig& c) {
  Json j;
  j["name"] = c.name;
  j["model"] = c.model;
  if (c.revision) j["revision"] = *c.revision;
  if (c.model_make) {
    j["model_make"] = {{"preset", c.model_make->preset}, {"arch", c.model_make->arch}, {"dtype", c.model_make->dtype},
                       {"seed", c.model_make->seed}, {"tokenizer", c.model_make->tokenizer}};
  } else {
    j["model_make"] = nullptr;
  }
  const BackendConfig& b = c.backend;
  Json max_memory = Json::object();
  for (const auto& [dev, size] : b.max_memory) max_memory[dev] = size;
  j["backend"] = {{"type", b.type},
                  {"device_ids", b.device_ids},
                  {"virtual_devices", b.virtual_devices},
                  {"device_map", b.device_map_file ? *b.device_map_file : b.strategy},
                  {"max_memory", max_memory},
                  {"dtype", b.dtype ? Json(*b.dtype) : Json(nullptr)},
                  {"quantize", b.quantize ? Json(*b.quantize) : Json(nullptr)},
                  {"threads", b.threads},
                  {"wait", b.wait},
                  {"context", b.context},
                  {"micro_batches", b.micro_batches},
                  {"tensor_parallel", b.tensor_parallel},
                  {"pipeline_parallel", b.pipeline_parallel}};
  if (b.micro_batch > 0) j["backend"]["micro_batch"] = b.micro_batch;  // (only when set: the CSV's columns stay)
  if (b.expert_parallel > 1) j["backend"]["expert_parallel"] = b.expert_parallel;  // (likewise)
  if (b.cpu_moe) j["backend"]["cpu_moe"] = true;
  if (b.n_cpu_moe) j["backend"]["n_cpu_moe"] = *b.n_cpu_moe;
  if (!b.command.empty()) j["backend"]["command"] = b.command;  // (only for their types, likewise)
  if (b.engine) j["backend"]["engine"] = *b.engine;
  if (b.torch_dtype) j["backend"]["torch_dtype"] = *b.torch_dtype;
  const ScenarioConfig& s = c.scenario;
  j["scenario"] = {{"dataset", s.dataset.empty() ? Json(nullptr) : Json(s.dataset)},
                   {"prompts", s.prompts},
                   {"prompts_ids", s.prompts_ids},
                   {"num_samples", s.num_samples},
                   {"batch_size", s.batch_size},
                   {"max_new_tokens", s.max_new_tokens},
                   {"warmup_samples", s.warmup_samples},
                   {"seed", s.seed},
                   {"temperature", s.temperature},
                   {"ignore_eos", s.ignore_eos}};
  if (b.type == "openai") {  // the server and the load (the key itself is never written out)
    const OpenAiConfig& o = c.openai;
    j["backend"].update({{"url", o.url}, {"model", o.model.empty() ? Json(nullptr) : Json(o.model)},
                         {"api_key", o.api_key.empty() ? Json(nullptr) : Json("(set)")}, {"endpoint", o.endpoint},
                         {"tokenizer", o.tokenizer.empty() ? Json(nullptr) : Json(o.tokenizer)}, {"timeout_s", o.timeout_s}});
    j["scenario"].update({{"concurrency", o.concurrency},
                          {"request_rate", o.request_rate ? Json(*o.request_rate) : Json(nullptr)},
                          {"burstiness", o.burstiness}});
    j["scenario"]["random"] = o.random ? Json{{"input_tokens", o.random->input_tokens}, {"output_tokens", o.random->output_tokens},
                                              {"range_ratio", o.random->range_ratio}, {"distribution", o.random->distribution}}
                                       : Json(nullptr);
    auto ms = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
    j["scenario"]["slo"] = {{"ttft_ms", ms(o.slo.ttft_ms)}, {"tpot_ms", ms(o.slo.tpot_ms)}, {"e2e_ms", ms(o.slo.e2e_ms)}};
  }
  j["monitor"] = {{"interval_ms", c.monitor.interval_ms}, {"idle_baseline_s", c.monitor.idle_baseline_s}};
  j["output"] = {{"dir", c.output.dir}, {"formats", c.output.formats}};
  return j;
}

}  // namespace plexus::bench

// Benchmark configs: typed values and defaults, errors with file:line and key path, --set
// overrides, sweep expansion.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "bench/config_loader.h"
#include "bench/config_paths.h"
#include "core/error.h"
#include "test_util.h"

namespace plexus::bench {
namespace {

std::string write(const testing::TempDir& dir, const std::string& text, const std::string& name = "b.yaml") {
  const std::string path = dir / name;
  std::ofstream(path) << text;
  return path;
}

// The InputError message of loading `text` (fails the test when it loads).
std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  testing::TempDir dir("bench-config");
  const std::string path = write(dir, text);
  try {
    load_bench_config(path, sets);
  } catch (const InputError& e) {
    const std::string m = e.what();
    // Errors start with the file name (or --set); strip the directory so tests read simply.
    const std::size_t at = m.find("b.yaml");
    return at == std::string::npos ? m : m.substr(at);
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

const char* kGood = R"(name: demo
model: models/x
model_make: {preset: tiny, dtype: f32, seed: 3, tokenizer: tok}
backend:
  type: plexus
  device_ids: [0, 1]
  device_map: balanced
  max_memory: {0: 10GiB, 1: 10GiB, cpu: 64GiB}
  threads: 2
  wait: passive
scenario:
  prompts: ["Hello", "World"]
  num_samples: 8
  batch_size: 4
  max_new_tokens: 16
  warmup_samples: 2
  seed: 7
monitor: {interval_ms: 50, idle_baseline_s: 1.5}
output: {dir: out, formats: [json, csv]}
)";

TEST(BenchConfig, ReadsEveryKey) {
  testing::TempDir dir("bench-config");
  const LoadedConfig l = load_bench_config(write(dir, kGood), {});
  ASSERT_EQ(l.points.size(), 1u);
  EXPECT_TRUE(l.sweep.is_null());
  const BenchConfig& c = l.points[0].config;
  EXPECT_EQ(c.name, "demo");
  EXPECT_EQ(c.model, "models/x");
  ASSERT_TRUE(c.model_make);
  EXPECT_EQ(c.model_make->preset, "tiny");
  EXPECT_EQ(c.model_make->dtype, "f32");
  EXPECT_EQ(c.model_make->seed, 3u);
  EXPECT_EQ(c.model_make->arch, "llama");  // default
  EXPECT_EQ(c.backend.device_ids, (std::vector<long long>{0, 1}));
  EXPECT_EQ(c.backend.strategy, "balanced");
  ASSERT_EQ(c.backend.max_memory.size(), 3u);
  EXPECT_EQ(c.backend.max_memory[2], (std::pair<std::string, std::string>{"cpu", "64GiB"}));
  EXPECT_EQ(c.backend.threads, 2);
  EXPECT_EQ(c.backend.wait, "passive");
  EXPECT_EQ(c.scenario.prompts, (std::vector<std::string>{"Hello", "World"}));
  EXPECT_EQ(c.scenario.num_samples, 8);
  EXPECT_EQ(c.scenario.batch_size, 4);
  EXPECT_EQ(c.scenario.max_new_tokens, 16);
  EXPECT_EQ(c.scenario.warmup_samples, 2);
  EXPECT_EQ(c.scenario.seed, 7u);
  EXPECT_DOUBLE_EQ(c.monitor.interval_ms, 50);
  EXPECT_DOUBLE_EQ(c.monitor.idle_baseline_s, 1.5);
  EXPECT_EQ(c.output.dir, "out");
  EXPECT_EQ(c.output.formats, (std::vector<std::string>{"json", "csv"}));
  const Json j = config_to_json(c);
  EXPECT_EQ(j["backend"]["device_ids"], Json::array({0, 1}));
  EXPECT_EQ(j["backend"]["device_map"], "balanced");
  EXPECT_EQ(j["scenario"]["batch_size"], 4);
  EXPECT_EQ(j["monitor"]["idle_baseline_s"], 1.5);
}

TEST(BenchConfig, Defaults) {
  testing::TempDir dir("bench-config");
  const LoadedConfig l = load_bench_config(write(dir, "model: m\nscenario: {prompts_ids: [[1, 2, 3]]}\n", "my-bench.yaml"), {});
  const BenchConfig& c = l.points[0].config;
  EXPECT_EQ(c.name, "my-bench");  // the file's stem
  EXPECT_FALSE(c.model_make);
  EXPECT_FALSE(c.backend.plans());
  EXPECT_EQ(c.backend.strategy, "stages");
  EXPECT_EQ(c.backend.wait, "auto");
  EXPECT_EQ(c.scenario.prompts_ids, (std::vector<std::vector<std::int32_t>>{{1, 2, 3}}));
  EXPECT_EQ(c.scenario.num_samples, 0);  // one per prompt
  EXPECT_EQ(c.scenario.batch_size, 1);
  EXPECT_EQ(c.scenario.max_new_tokens, 32);
  EXPECT_EQ(c.scenario.warmup_samples, 1);
  EXPECT_DOUBLE_EQ(c.monitor.interval_ms, 100);
  EXPECT_EQ(c.output.dir, "bench-results");
  EXPECT_EQ(c.output.formats, (std::vector<std::string>{"json", "csv", "html"}));
}

TEST(BenchConfig, BadConfigsNameLineAndKeyPath) {
  const std::string base = "model: m\n";
  const struct {
    std::string text, expected;
  } cases[] = {
      {base + "scenario:\n  prompts: [a]\n  batch_sise: 2\n", "b.yaml:4: scenario.batch_sise: unknown key (did you mean 'batch_size'?)"},
      {base + "scenario:\n  prompts: [a]\n  num_samples: -1\n", "b.yaml:4: scenario.num_samples: must be between 1 and"},
      {base + "scenario:\n  prompts: [a]\n  max_new_tokens: many\n", "b.yaml:4: scenario.max_new_tokens: expected an integer, got 'many'"},
      {base + "scenario:\n  prompts: [a]\n  batch_size: [1, 2]\n", "b.yaml:4: scenario.batch_size: expected an integer, got a list"},
      {base + "backend:\n  device_map: fastest\nscenario: {prompts: [a]}\n",
       "b.yaml:3: backend.device_map: 'fastest' is neither a strategy (stages, sequential, balanced, balanced_low_0, auto)"},
      {base + "backend:\n  max_memory: {0: lots}\nscenario: {prompts: [a]}\n", "b.yaml:3: backend.max_memory.0:"},
      {base + "backend:\n  wait: sleepy\nscenario: {prompts: [a]}\n",
       "b.yaml:3: backend.wait: unknown wait policy 'sleepy' (use spin, passive or auto)"},
      {base + "backend:\n  type: vllm\nscenario: {prompts: [a]}\n", "b.yaml:3: backend.type: unknown backend type 'vllm'"},
      {base + "backend:\n  quantize: q4_k_x\nscenario: {prompts: [a]}\n",
       "b.yaml:3: backend.quantize: unknown quantisation mix 'q4_k_x' (did you mean 'Q4_K_"},
      {base + "backend:\n  device_ids: [0, x]\nscenario: {prompts: [a]}\n", "b.yaml:3: backend.device_ids[1]: expected an integer, got 'x'"},
      {"scenario: {prompts: [a]}\n", "b.yaml:1: model: missing"},
      {base + "backend: {}\n", "b.yaml:1: scenario: missing"},
      {base + "scenario: {num_samples: 3}\n", "b.yaml:2: scenario: give the prompts: one of dataset, prompts or prompts_ids"},
      {base + "scenario: {prompts: [a], prompts_ids: [[1]]}\n", "scenario: give only one of dataset, prompts or prompts_ids"},
      {base + "scenario: {dataset: /nonexistent/data.jsonl}\n", "b.yaml:2: scenario.dataset: no such file"},
      {base + "scenario: {prompts: [a]}\noutput: {formats: [json, pdf]}\n", "b.yaml:3: output.formats: unknown format 'pdf'"},
      {base + "scenario: {prompts: [a]}\nmonitor: {interval_ms: 0}\n", "b.yaml:3: monitor.interval_ms: must be between 1 and 60000"},
      {base + "scenario: {prompts: [a]}\nmodel_make: {preset: huge}\n", "b.yaml:3: model_make.preset: unknown preset 'huge'"},
      {base + "scenario: {prompts: [a]}\nbenchmark: 3\n", "b.yaml:3: benchmark: unknown key"},
      {base + "scenario:\n  prompts: [a\n  max_new_tokens: 3\n", "b.yaml:4: YAML syntax error"},
      {base + "scenario: {prompts: [a]}\nsweep: {scenario.batch: [1, 2]}\n",
       "b.yaml:3: sweep.scenario.batch: unknown key (did you mean 'scenario.batch_size'?)"},
      {base + "scenario: {prompts: [a]}\nsweep:\n  scenario.batch_size: 4\n", "b.yaml:4: sweep.scenario.batch_size: expected a non-empty list"},
      {base + "scenario: {prompts: [a]}\nsweep: {scenario.batch_size: [1, -2]}\n", "b.yaml:3: scenario.batch_size: must be between 1 and 256"},
      {"- a\n- b\n", "(top level): expected a mapping"},
      {base + "scenario:\n", "b.yaml:2: scenario: is empty"},
      {base + "backend:\nscenario: {prompts: [a]}\noutput: {dir: ''}\n", "b.yaml:4: output.dir: the directory is empty"},
      {base + "backend:\n  threads: 2\n  tensor_parallel: 0\nscenario: {prompts: [a]}\n",
       "b.yaml:4: backend.tensor_parallel: must be between 1 and 4096, got 0"},
      {base + "backend:\n  pipeline_parallel: two\nscenario: {prompts: [a]}\n",
       "b.yaml:3: backend.pipeline_parallel: expected an integer, got 'two'"},
      {base + "backend: {tensor_paralel: 2}\nscenario: {prompts: [a]}\n",
       "b.yaml:2: backend.tensor_paralel: unknown key (did you mean 'tensor_parallel'?)"},
  };
  for (const auto& c : cases) {
    const std::string m = error_of(c.text);
    EXPECT_NE(m.find(c.expected), std::string::npos) << "config:\n" << c.text << "error: " << m << "\nexpected: " << c.expected;
  }
}

TEST(BenchConfig, SetOverridesParseYamlValues) {
  testing::TempDir dir("bench-config");
  const std::string path = write(dir, kGood);
  const LoadedConfig l = load_bench_config(
      path, {"scenario.batch_size=2", "backend.device_ids=[3]", "output.formats=html", "name=other", "backend.max_memory.cpu=1GiB",
             "scenario.prompts=[x, y, z]", "monitor.idle_baseline_s=0"});
  const BenchConfig& c = l.points[0].config;
  EXPECT_EQ(c.scenario.batch_size, 2);
  EXPECT_EQ(c.backend.device_ids, (std::vector<long long>{3}));
  EXPECT_EQ(c.output.formats, (std::vector<std::string>{"html"}));
  EXPECT_EQ(c.name, "other");
  EXPECT_EQ(c.backend.max_memory.back(), (std::pair<std::string, std::string>{"cpu", "1GiB"}));
  EXPECT_EQ(c.scenario.prompts.size(), 3u);
  EXPECT_DOUBLE_EQ(c.monitor.idle_baseline_s, 0);
  EXPECT_EQ(load_bench_config(path, {"backend.quantize=q4_k"}).points[0].config.backend.quantize, "q4_k");
  EXPECT_FALSE(c.backend.quantize.has_value());
  // "0,1" (what a shell user types) is a list too.
  EXPECT_EQ(load_bench_config(path, {"backend.device_ids=0,1"}).points[0].config.backend.device_ids, (std::vector<long long>{0, 1}));
  // A section that the file lacks is made.
  testing::TempDir d2("bench-config");
  const std::string bare = write(d2, "model: m\nscenario: {prompts: [a]}\n");
  EXPECT_EQ(load_bench_config(bare, {"backend.virtual_devices=4"}).points[0].config.backend.virtual_devices, 4);
}

TEST(BenchConfig, CpuMoeKeysAreRead) {
  testing::TempDir dir("bench-config");
  const std::string some = write(dir, "model: m\nbackend: {n_cpu_moe: 3}\nscenario: {prompts: [a]}\n");
  const BenchConfig c = load_bench_config(some, {}).points[0].config;
  ASSERT_TRUE(c.backend.n_cpu_moe.has_value());
  EXPECT_EQ(*c.backend.n_cpu_moe, 3);
  EXPECT_FALSE(c.backend.cpu_moe);
  EXPECT_EQ(config_to_json(c)["backend"]["n_cpu_moe"], 3);
  const std::string all = write(dir, "model: m\nbackend: {cpu_moe: true}\nscenario: {prompts: [a]}\n", "all.yaml");
  const BenchConfig a = load_bench_config(all, {}).points[0].config;
  EXPECT_TRUE(a.backend.cpu_moe);
  EXPECT_EQ(config_to_json(a)["backend"]["cpu_moe"], true);
  // Left out: neither key in the JSON (the CSV's columns stay).
  const std::string plain = write(dir, "model: m\nscenario: {prompts: [a]}\n", "plain.yaml");
  const Json p = config_to_json(load_bench_config(plain, {}).points[0].config);
  EXPECT_FALSE(p["backend"].contains("cpu_moe"));
  EXPECT_FALSE(p["backend"].contains("n_cpu_moe"));
  const std::string bad = write(dir, "model: m\nbackend: {n_cpu_moe: lots}\nscenario: {prompts: [a]}\n", "bad.yaml");
  EXPECT_THROW(load_bench_config(bad, {}), InputError);
}

TEST(BenchConfig, TensorAndPipelineParallelAreBackendKeysThatSweep) {
  testing::TempDir dir("bench-config");
  const std::string bare = write(dir, "model: m\nbackend: {tensor_parallel: 2, pipeline_parallel: 2}\nscenario: {prompts: [a]}\n");
  const BenchConfig c = load_bench_config(bare, {}).points[0].config;
  EXPECT_EQ(c.backend.tensor_parallel, 2);
  EXPECT_EQ(c.backend.pipeline_parallel, 2);
  EXPECT_TRUE(c.backend.plans());  // devices implied: the run is planned (and reports per device)
  const Json j = config_to_json(c);
  EXPECT_EQ(j["backend"]["tensor_parallel"], 2);
  EXPECT_EQ(j["backend"]["pipeline_parallel"], 2);
  // Defaults: 1 and 1, no plan implied.
  const std::string plain = write(dir, "model: m\nscenario: {prompts: [a]}\n", "plain.yaml");
  const BenchConfig d = load_bench_config(plain, {}).points[0].config;
  EXPECT_EQ(d.backend.tensor_parallel, 1);
  EXPECT_EQ(d.backend.pipeline_parallel, 1);
  EXPECT_EQ(config_to_json(d)["backend"]["tensor_parallel"], 1);
  // --set and a sweep axis, like the other backend keys.
  const LoadedConfig l = load_bench_config(plain, {"backend.pipeline_parallel=1", "sweep.backend.tensor_parallel=[1, 2, 4]"});
  ASSERT_EQ(l.points.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(l.points[i].config.backend.tensor_parallel, 1LL << i);
    EXPECT_EQ(l.points[i].sweep_point, (Json{{"backend.tensor_parallel", 1 << i}}));
  }
  EXPECT_NE(error_of("model: m\nscenario: {prompts: [a]}\n", {"backend.tensor_parallel=-2"})
                .find("--set backend.tensor_parallel: must be between 1 and 4096, got -2"),
            std::string::npos);
}

// backend.expert_parallel (--ep): read, implies a plan, in the result's config only when set.
TEST(BenchConfig, ExpertParallelIsABackendKey) {
  testing::TempDir dir("bench-config-ep");
  const BenchConfig c = load_bench_config(write(dir, "model: m\nbackend: {expert_parallel: 4}\nscenario: {prompts: [a]}\n"), {})
                            .points[0].config;
  EXPECT_EQ(c.backend.expert_parallel, 4);
  EXPECT_TRUE(c.backend.plans());
  EXPECT_EQ(config_to_json(c)["backend"]["expert_parallel"], 4);
  const BenchConfig d = load_bench_config(write(dir, "model: m\nscenario: {prompts: [a]}\n", "plain.yaml"), {}).points[0].config;
  EXPECT_EQ(d.backend.expert_parallel, 1);
  EXPECT_FALSE(config_to_json(d)["backend"].contains("expert_parallel"));  // the CSV's columns stay
  EXPECT_NE(error_of("model: m\nbackend:\n  expert_parallel: 0\nscenario: {prompts: [a]}\n")
                .find("b.yaml:3: backend.expert_parallel: must be between 1 and 4096, got 0"),
            std::string::npos);
}

TEST(BenchConfig, BadSetsNameTheOverride) {
  EXPECT_NE(error_of(kGood, {"scenario.batchsize=2"}).find("--set scenario.batchsize: unknown key (did you mean 'scenario.batch_size'?)"),
            std::string::npos);
  EXPECT_NE(error_of(kGood, {"scenario.batch_size=zero"}).find("--set scenario.batch_size: expected an integer, got 'zero'"),
            std::string::npos);
  EXPECT_NE(error_of(kGood, {"scenario.batch_size"}).find("--set 'scenario.batch_size': expected key.path=value"), std::string::npos);
  EXPECT_NE(error_of(kGood, {"model.dir=x"}).find("--set model.dir: unknown key"), std::string::npos);
}

TEST(BenchConfig, SweepExpandsTheGridLastKeyFastest) {
  testing::TempDir dir("bench-config");
  const std::string path = write(dir, std::string(kGood) + "sweep:\n  scenario.batch_size: [1, 2, 4]\n  backend.device_map: [stages, auto]\n");
  const LoadedConfig l = load_bench_config(path, {"scenario.max_new_tokens=5"});
  ASSERT_EQ(l.points.size(), 6u);
  EXPECT_EQ(l.sweep["scenario.batch_size"], Json::array({1, 2, 4}));
  EXPECT_EQ(l.sweep["backend.device_map"], Json::array({"stages", "auto"}));
  const long long batch[] = {1, 1, 2, 2, 4, 4};
  const char* map[] = {"stages", "auto", "stages", "auto", "stages", "auto"};
  for (std::size_t i = 0; i < 6; ++i) {
    const BenchPoint& p = l.points[i];
    EXPECT_EQ(p.config.scenario.batch_size, batch[i]) << i;
    EXPECT_EQ(p.config.backend.strategy, map[i]) << i;
    EXPECT_EQ(p.config.scenario.max_new_tokens, 5);  // --set applies to every point
    EXPECT_EQ(p.sweep_point, (Json{{"scenario.batch_size", batch[i]}, {"backend.device_map", map[i]}})) << i;
  }
}

TEST(BenchConfig, AGridWhoseSizeOverflowsIsRefused) {
  // 8 axes x 256 values: 2^64 points, which wraps a 64-bit count to 0.
  std::string values = "[";
  for (int i = 1; i <= 256; ++i) values += (i > 1 ? ", " : "") + std::to_string(i);
  values += "]";
  std::string text = std::string(kGood) + "sweep:\n";
  for (const char* key : {"scenario.batch_size", "scenario.num_samples", "scenario.max_new_tokens", "scenario.warmup_samples",
                          "scenario.seed", "backend.threads", "monitor.interval_ms", "backend.virtual_devices"}) {
    text += std::string("  ") + key + ": " + values + "\n";
  }
  EXPECT_NE(error_of(text).find("b.yaml: sweep: more than 10000 points"), std::string::npos) << error_of(text);
}

TEST(BenchConfig, AliasBombsAndDeepNestingAreRefusedBeforeTheyExpand) {
  std::string bomb = std::string(kGood) + "x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < 10; ++i) {
    bomb += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  bomb += "sweep: {scenario.prompts: [*a9]}\n";
  EXPECT_NE(error_of(bomb).find("expands to more than 100000 values"), std::string::npos) << error_of(bomb);
  for (const int depth : {300, 100000}) {  // ours, and yaml-cpp's own limit
    const std::string m = error_of(std::string(kGood) + "extra: " + std::string(depth, '[') + std::string(depth, ']') + "\n");
    const std::string line = std::to_string(std::count(kGood, kGood + std::strlen(kGood), '\n') + 1);  // `extra:`
    EXPECT_EQ(m.rfind("b.yaml:" + line + ": YAML nested deeper than 256 levels", 0), 0u) << m;
  }
}

TEST(BenchConfig, AYamlErrorInsideAValueNamesTheLine) {
  const std::string m = error_of(std::string(kGood), {"backend.device_ids=0,[1"});
  EXPECT_NE(m.find("--set backend.device_ids: expected a list of integers"), std::string::npos) << m;
  const std::string in_file = error_of("model: m\nbackend:\n  device_ids: \"0,[1\"\nscenario: {prompts: [a]}\n");
  EXPECT_NE(in_file.find("b.yaml:3: backend.device_ids: expected a list of integers"), std::string::npos) << in_file;
}

TEST(BenchConfig, SetCanAddASweepAxis) {
  testing::TempDir dir("bench-config");
  const LoadedConfig l = load_bench_config(write(dir, kGood), {"sweep.scenario.batch_size=[1, 8]"});
  ASSERT_EQ(l.points.size(), 2u);
  EXPECT_EQ(l.points[1].config.scenario.batch_size, 8);
  EXPECT_EQ(l.points[1].sweep_point, (Json{{"scenario.batch_size", 8}}));
  EXPECT_NE(error_of(kGood, {"sweep.scenario.bs=[1]"}).find("--set sweep.scenario.bs: unknown key"), std::string::npos);
}

// One key under its two names (scenario.batch_size, scenario.max_sequences) as two sweep axes ran
// every point with the later axis's value while the results were labelled with the other's; two
// --sets kept the last. Both refused, naming both, as the file refuses both names in a section.
TEST(BenchConfig, OneKeyUnderBothNamesInASweepOrTwoSetsIsRefused) {
  const std::string grid = error_of(std::string(kGood) + "sweep: {scenario.batch_size: [1, 2], scenario.max_sequences: [4]}\n");
  EXPECT_NE(grid.find("b.yaml:20: sweep.scenario.batch_size and sweep.scenario.max_sequences are one key under its two names"),
            std::string::npos)
      << grid;
  const std::string sets = error_of(kGood, {"scenario.batch_size=1", "scenario.max_sequences=2"});
  EXPECT_NE(sets.find("--set scenario.batch_size and --set scenario.max_sequences set one key under its two names"), std::string::npos)
      << sets;
  const std::string axes = error_of(kGood, {"sweep.backend.micro_batch=[1]", "sweep.backend.micro_batches=[2]"});
  EXPECT_NE(axes.find("--set sweep.backend.micro_batch and --set sweep.backend.micro_batches set one key"), std::string::npos) << axes;
  // A --set axis replaces the file's axis under the other name, as a --set value replaces the
  // file's key (kGood's scenario.batch_size 4).
  testing::TempDir dir("bench-config");
  const LoadedConfig l = load_bench_config(write(dir, std::string(kGood) + "sweep: {scenario.batch_size: [1, 2]}\n"),
                                           {"sweep.scenario.max_sequences=[3]"});
  ASSERT_EQ(l.points.size(), 1u);
  EXPECT_EQ(l.points[0].config.scenario.batch_size, 3);
  EXPECT_EQ(l.points[0].sweep_point, (Json{{"scenario.max_sequences", 3}}));
  EXPECT_EQ(load_bench_config(write(dir, kGood), {"scenario.max_sequences=2"}).points[0].config.scenario.batch_size, 2);
}

TEST(BenchConfig, KnownPathsAndNearestKey) {
  EXPECT_TRUE(is_known_config_path("backend.device_ids"));
  EXPECT_TRUE(is_known_config_path("backend.max_memory.cpu"));
  EXPECT_FALSE(is_known_config_path("backend.max_memory.cpu.x"));
  EXPECT_FALSE(is_known_config_path("backend.gpus"));
  EXPECT_EQ(nearest_key("treads", {"threads", "dtype"}), "threads");
  EXPECT_EQ(nearest_key("completely_else", {"threads", "dtype"}), "");
}

}  // namespace
}  // namespace plexus::bench

// Helpers for `plexus batch` end-to-end tests: request files, output files read back by id, an
// environment variable set for the scope of a test, runs under mpirun.
#pragma once
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/json.h"
#include "core/mmap_file.h"
#include "model/make_model.h"
#include "test_util.h"

namespace plexus::testing {

// The lines of a JSON-lines file (an output holds nothing but results: every line is one).
inline std::vector<Json> read_jsonl(const std::string& path) {
  std::vector<Json> out;
  std::stringstream in(read_text_file_or_empty(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

// Output lines by id (as JSON text), without the fields that may differ between runs
// (replica, latency_ms); fails the test when an id appears twice.
inline std::map<std::string, Json> results_by_id(const std::string& path) {
  std::map<std::string, Json> out;
  for (Json j : read_jsonl(path)) {
    const std::string key = j["id"].dump();
    EXPECT_EQ(out.count(key), 0u) << "id " << key << " written twice in " << path;
    j.erase("replica");
    j.erase("latency_ms");
    out[key] = j;
  }
  return out;
}

// An OpenAI Batch API input line.
inline Json line(const std::string& custom_id, const char* url, const Json& body) {
  return {{"custom_id", custom_id}, {"method", "POST"}, {"url", url}, {"body", body}};
}

inline void write_lines(const std::string& path, const std::vector<Json>& lines) {
  std::ofstream out(path);
  for (const Json& l : lines) out << l.dump() << "\n";
}

// OpenAI result lines by custom_id (failing the test on a custom_id written twice).
inline std::map<std::string, Json> by_custom_id(const std::string& path) {
  std::map<std::string, Json> out;
  for (const Json& l : read_jsonl(path)) {
    const std::string key = l["custom_id"].get<std::string>();
    EXPECT_EQ(out.count(key), 0u) << key << " written twice";
    out[key] = l;
  }
  return out;
}

// A response body without what differs between two answers to one request: its id, time of
// creation, the measured time (energy_j: null here, no energy source) and tool calls' ids.
inline Json comparable(Json body) {
  body.erase("id");
  body.erase("created");
  body["usage"].erase("time_s");
  for (Json& choice : body["choices"]) {
    if (!choice.contains("message") || !choice["message"].contains("tool_calls")) continue;
    for (Json& call : choice["message"]["tool_calls"]) call.erase("id");
  }
  return body;
}

// Requests with ids r0..r{n-1}: prompts of varying length, some greedy, some sampled with a seed.
inline void write_requests(const std::string& path, int n, std::int64_t vocab) {
  std::ofstream out(path);
  for (int i = 0; i < n; ++i) {
    Json j = {{"id", "r" + std::to_string(i)}, {"ids", some_ids(2 + i % 5, vocab, i)}, {"max_tokens", 3 + i % 4}};
    if (i % 3 == 1) j["temperature"] = 1.3, j["seed"] = 100 + i;
    out << j.dump() << "\n";
  }
}

// A random model and `requests` requests (write_requests) in a temporary directory, and the
// `plexus batch` command line on them with the fixture's fixed flags.
class BatchRunTest : public ::testing::Test {
 protected:
  static constexpr std::int64_t kVocab = 300;
  BatchRunTest(const std::string& tag, std::uint64_t seed, int requests, std::string fixed_flags)
      : dir_(tag), seed_(seed), requests_(requests), fixed_flags_(std::move(fixed_flags)) {}
  void SetUp() override {
    MakeModelOptions o;
    o.seed = seed_;
    o.std = 0.08;
    o.vocab_size = kVocab;
    write_random_model(dir_ / "model", o);
    write_requests(in(), requests_, kVocab);
  }
  std::string in() const { return dir_ / "in.jsonl"; }
  // `batch MODEL --input IN --output OUT FIXED_FLAGS EXTRA` (flags later on the line win).
  std::string batch_args(const std::string& out, const std::string& extra = "") const {
    return "batch " + shell_quote(dir_ / "model") + " --input " + shell_quote(in()) + " --output " + shell_quote(out) + " " +
           fixed_flags_ + " " + extra;
  }
  TempDir dir_;

 private:
  std::uint64_t seed_;
  int requests_;
  std::string fixed_flags_;
};

// Runs `plexus ARGS` under `mpirun -np N --oversubscribe`; the exit status, stdout and stderr.
inline ProcessResult run_mpi(int np, const std::string& args, const std::string& env = "") {
  // Under ASan, OpenMPI's own allocations that outlive MPI_Finalize are not ours to report.
  return run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CUDA_VISIBLE_DEVICES= ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 " +
                     env + " timeout 300 mpirun -np " + std::to_string(np) + " --oversubscribe " + shell_quote(PLEXUS_BINARY) + " " + args);
}

inline bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace plexus::testing

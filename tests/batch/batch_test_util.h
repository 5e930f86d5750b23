// Helpers for `plexus batch` end-to-end tests: request files, output files read back by id, an
// environment variable set for the scope of a test.
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

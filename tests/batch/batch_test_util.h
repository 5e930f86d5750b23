// Helpers for `plexus batch` end-to-end tests: request files, output files read back by id, an
// environment variable set for the scope of a test.
#pragma once
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "test_util.h"

namespace plexus::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<Json> read_jsonl(const std::string& path) {
  std::vector<Json> out;
  std::stringstream in(slurp(path));
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

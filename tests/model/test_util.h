// Helpers for model tests: temporary directories, random checkpoints, and running the real
// plexus binary as a process.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "model/make_model.h"

namespace plexus::testing {

// A fresh directory under the build tree's temp area, removed at destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct ProcessResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs a simple shell command (its output redirected, stdin from /dev/null) and captures its exit status, stdout and
// stderr; a command killed by signal N exits 128 + N.
ProcessResult run_command(const std::string& command);
// Runs `plexus ARGS` (ARGS already shell-quoted) with GPUs hidden from the CUDA runtime
// (CUDA_VISIBLE_DEVICES=) and captures its output.
ProcessResult run_plexus(const std::string& args);
std::string shell_quote(const std::string& s);

// n deterministic pseudo-random token ids in [0, vocab), different for each salt.
std::vector<std::int32_t> some_ids(int n, std::int64_t vocab, int salt);

// The JSON objects of a .jsonl file, one a non-empty line.
std::vector<Json> read_jsonl(const std::string& path);
// "1,2,3": ids as --ids takes them.
std::string ids_csv(const std::vector<std::int32_t>& ids);

// Rewrites fields of DIR/config.json.
void patch_config(const std::string& dir, const Json& fields);

}  // namespace plexus::testing

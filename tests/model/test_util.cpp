// Temporary directories and subprocesses for tests.
#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/mmap_file.h"

namespace plexus::testing {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  path_ = (fs::temp_directory_path() / ("plexus-test-" + tag + "-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(counter++)))
              .string();
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

ProcessResult run_command(const std::string& command) {
  TempDir tmp("proc");
  const std::string out = tmp / "out", err = tmp / "err";
  const std::string cmd = command + " >" + shell_quote(out) + " 2>" + shell_quote(err) + " </dev/null";
  const int status = std::system(cmd.c_str());
  ProcessResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text_file_or_empty(out);
  r.err = read_text_file_or_empty(err);
  return r;
}

// GPUs hidden from the CUDA runtime: the command-line tests rehearse devices on the CPU (the gpu
// label tests the GPUs), so --max-memory names virtual CPU devices on every machine.
ProcessResult run_plexus(const std::string& args) {
  return run_command("env CUDA_VISIBLE_DEVICES= " + shell_quote(PLEXUS_BINARY) + " " + args);
}

std::vector<Json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<Json> out;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(Json::parse(line));
  return out;
}

std::string ids_csv(const std::vector<std::int32_t>& ids) {
  std::string s;
  for (auto id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

std::vector<std::int32_t> some_ids(int n, std::int64_t vocab, int salt) {
  std::vector<std::int32_t> ids;
  std::uint64_t s = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(salt + 1);
  for (int i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    ids.push_back(static_cast<std::int32_t>((s >> 33) % static_cast<std::uint64_t>(vocab)));
  }
  return ids;
}

void patch_config(const std::string& dir, const Json& fields) {
  Json j = read_json_file(dir + "/config.json");
  for (auto it = fields.begin(); it != fields.end(); ++it) j[it.key()] = it.value();
  std::ofstream(dir + "/config.json") << j.dump(2);
}

}  // namespace plexus::testing

// Test helpers for durability: a small tmpfs mounted for one test (to fill up or make
// read-only), plexus started as a process that can be signalled, and a check that every report
// file in a directory is complete and valid.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace plexus::testing {

// Mounts a tmpfs of `size_bytes` on `dir` (created) until destruction. Tests run as root; where
// mounting is refused, mounted() is false and why() says so (the test should GTEST_SKIP).
class TmpfsMount {
 public:
  TmpfsMount(const std::string& dir, long long size_bytes, bool read_only = false);
  ~TmpfsMount();  // always unmounts
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, why_;
  bool mounted_ = false;
};

// Starts `plexus ARGS...` with stdout and stderr going to the given files and stdin from
// /dev/null; returns its pid (-1 when it could not start).
pid_t spawn_plexus(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path);
// Waits for `pid`; its exit status, or 128 + N when signal N killed it.
int wait_exit(pid_t pid);

// Problems with the files in `dir` (not recursive): a temporary file left behind, a *.json that
// does not parse, a *.csv row whose cell count differs from its header's (RFC 4180 quoting), an
// *.html that does not end with </html>. Empty when every file is complete and valid.
std::vector<std::string> report_file_problems(const std::string& dir);

// The cells of one CSV line (quotes removed).
std::vector<std::string> csv_cells(const std::string& line);

}  // namespace plexus::testing

// tmpfs mounts, signalable plexus processes and report-file validation for durability tests.
#include "durability_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/json.h"
#include "core/mmap_file.h"

extern char** environ;

namespace plexus::testing {

namespace fs = std::filesystem;

TmpfsMount::TmpfsMount(const std::string& dir, long long size_bytes, bool read_only) : dir_(dir) {
  fs::create_directories(dir);
  const std::string options = "size=" + std::to_string(size_bytes) + ",mode=0755";
  if (::mount("tmpfs", dir.c_str(), "tmpfs", read_only ? MS_RDONLY : 0, options.c_str()) != 0) {
    why_ = "cannot mount a tmpfs on " + dir + ": " + std::strerror(errno) + " (these checks need root, as in CI)";
    return;
  }
  mounted_ = true;
}

TmpfsMount::~TmpfsMount() {
  if (!mounted_) return;
  if (::umount2(dir_.c_str(), 0) != 0) ::umount2(dir_.c_str(), MNT_DETACH);
}

pid_t spawn_plexus(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all = {PLEXUS_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, PLEXUS_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else cells.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

std::vector<std::string> report_file_problems(const std::string& dir) {
  std::vector<std::string> problems;
  if (!fs::is_directory(dir)) return problems;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const std::string path = e.path().string();
    if (name.find(".tmp") != std::string::npos || name.rfind(".plexus-write-test", 0) == 0) {
      problems.push_back(path + ": temporary file left behind");
      continue;
    }
    if (!e.is_regular_file()) continue;
    const std::string text = read_text_file_or_empty(path);
    const std::string ext = e.path().extension().string();
    if (ext == ".json") {
      try {
        const Json parsed = Json::parse(text);
        if (parsed.is_discarded()) problems.push_back(path + ": not valid JSON");
      } catch (const std::exception& ex) {
        problems.push_back(path + ": not valid JSON (" + std::to_string(text.size()) + " bytes): " + ex.what());
      }
    } else if (ext == ".csv") {
      if (text.empty()) {
        problems.push_back(path + ": empty CSV (no header)");
        continue;
      }
      if (text.back() != '\n') problems.push_back(path + ": last row is cut short (no final newline)");
      std::istringstream lines(text);
      std::string line;
      std::getline(lines, line);
      const std::size_t columns = csv_cells(line).size();
      for (int row = 2; std::getline(lines, line); ++row) {
        const std::size_t n = csv_cells(line).size();
        if (n != columns) {
          problems.push_back(path + ":" + std::to_string(row) + ": " + std::to_string(n) + " cells, the header has " + std::to_string(columns));
          break;
        }
      }
    } else if (ext == ".html") {
      std::string end = text;
      while (!end.empty() && (end.back() == '\n' || end.back() == ' ')) end.pop_back();
      if (end.size() < 7 || end.compare(end.size() - 7, 7, "</html>") != 0) problems.push_back(path + ": does not end with </html>");
    }
  }
  return problems;
}

}  // namespace plexus::testing

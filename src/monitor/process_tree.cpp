// /proc/PID/stat's fourth field is the parent pid; the tree is a breadth-first walk from the root.
#include "monitor/process_tree.h"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace plexus {

std::vector<pid_t> descendants_of(pid_t root, const std::map<pid_t, pid_t>& parent_of) {
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, parent] : parent_of) children.emplace(parent, pid);
  std::vector<pid_t> tree{root};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    const auto [begin, end] = children.equal_range(tree[i]);
    for (auto it = begin; it != end; ++it) {
      if (it->second != root) tree.push_back(it->second);
    }
  }
  return tree;
}

std::map<pid_t, pid_t> read_process_parents() {
  std::map<pid_t, pid_t> parents;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return parents;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    const std::string path = std::string("/proc/") + entry->d_name + "/stat";
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) continue;  // ended meanwhile
    char text[512];
    const std::size_t n = std::fread(text, 1, sizeof text - 1, f);
    std::fclose(f);
    text[n] = '\0';
    // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so read after the last ')'.
    const char* close = std::strrchr(text, ')');
    long parent = 0;
    char state = 0;
    if (close != nullptr && std::sscanf(close + 1, " %c %ld", &state, &parent) == 2) {
      parents[static_cast<pid_t>(pid)] = static_cast<pid_t>(parent);
    }
  }
  closedir(dir);
  return parents;
}

std::vector<pid_t> process_tree(pid_t root) { return descendants_of(root, read_process_parents()); }

}  // namespace plexus

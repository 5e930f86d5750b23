// A process and its descendants, from /proc: whose GPU memory and utilisation count as a watched
// command's (`plexus monitor -- CMD`).
#pragma once
#include <sys/types.h>

#include <map>
#include <vector>

namespace plexus {

// `root` and every process descended from it in `parent_of` (pid → parent pid), root first.
std::vector<pid_t> descendants_of(pid_t root, const std::map<pid_t, pid_t>& parent_of);

// pid → parent pid of every process /proc lists now (processes that end while it is read are
// left out).
std::map<pid_t, pid_t> read_process_parents();

// descendants_of(root, read_process_parents()).
std::vector<pid_t> process_tree(pid_t root);

}  // namespace plexus

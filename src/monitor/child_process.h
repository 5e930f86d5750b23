// A command run as a child process, argv as given (no shell), for `plexus monitor -- CMD` and
// bench's `backend.type: command`. The child is forked held: it waits until release() before it
// execs, so the caller can start watching its pid first. A command that cannot be run is an
// InputError (exit 2): found before the fork (PATH search, permissions) or reported by the child
// through a close-on-exec pipe, so it is never confused with the command's own exit 127.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace plexus {

struct ChildExit {
  int exit_code = 0;  // the command's exit status, or 128 + signal as shells report a signal death
  int signal = 0;     // the signal that ended it (0: it exited)
};

// The path execv runs for `command`: itself when it holds a '/', else the first executable
// regular file of that name in $PATH. InputError naming the command and why otherwise.
std::string resolve_command(const std::string& command);

class ChildProcess {
 public:
  // Forks a held child for `argv` (argv[0] resolved by resolve_command). `stdout_fd` >= 0: the
  // child's standard output goes there (else it shares ours).
  explicit ChildProcess(const std::vector<std::string>& argv, int stdout_fd = -1);
  ~ChildProcess();  // a child still running is killed (SIGKILL) and reaped
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Lets the child exec the command; InputError ("cannot run 'CMD' (PATH): REASON") when exec
  // failed (the child has then been reaped).
  void release();
  // The child's end once it has ended (does not block).
  std::optional<ChildExit> poll();
  // Waits for the child's end.
  ChildExit wait();
  // Sends `sig` to the child while it runs.
  void signal(int sig);

 private:
  std::vector<std::string> argv_;
  std::string path_;
  pid_t pid_ = -1;
  int go_write_ = -1;      // release(): one byte lets the child exec
  int status_read_ = -1;   // the child's errno when exec fails; end of file when exec succeeded
  std::optional<ChildExit> exit_;
};

}  // namespace plexus

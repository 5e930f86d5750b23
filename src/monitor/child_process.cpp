// fork, a held child, execv, and the exit status as a shell reports it.
#include "monitor/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "core/error.h"

extern char** environ;

namespace plexus {

namespace {

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

ChildExit exit_of(int status) {
  ChildExit e;
  if (WIFSIGNALED(status)) {
    e.signal = WTERMSIG(status);
    e.exit_code = 128 + e.signal;
  } else {
    e.exit_code = WEXITSTATUS(status);
  }
  return e;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string resolve_command(const std::string& command) {
  if (command.empty()) throw InputError("the command to run is empty");
  if (command.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(command.c_str(), &st) != 0)
      throw InputError("cannot run '" + command + "': " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw InputError("cannot run '" + command + "': not a regular file");
    if (::access(command.c_str(), X_OK) != 0) throw InputError("cannot run '" + command + "': not executable");
    return command;
  }
  const char* env = std::getenv("PATH");
  const std::string path = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t start = 0; start <= path.size();) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    const std::string dir = end > start ? path.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + command;
    if (executable_file(candidate)) return candidate;
    start = end + 1;
  }
  throw InputError("cannot run '" + command + "': command not found (searched PATH=" + path + ")");
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, int stdout_fd) : argv_(argv) {
  if (argv.empty()) throw InputError("no command given to run");
  path_ = resolve_command(argv[0]);
  // Everything the child touches is made before the fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (std::string& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  int go[2], status[2];
  if (::pipe2(go, O_CLOEXEC) != 0) throw RuntimeError(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(status, O_CLOEXEC) != 0) {
    ::close(go[0]);
    ::close(go[1]);
    throw RuntimeError(std::string("pipe: ") + std::strerror(errno));
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    const int e = errno;
    for (int fd : {go[0], go[1], status[0], status[1]}) ::close(fd);
    throw RuntimeError(std::string("fork: ") + std::strerror(e));
  }
  if (pid_ == 0) {
    // The child's copies of the parent's ends: with its own write end of `go` open, the read below
    // would never see end of file if the parent died before release().
    ::close(go[1]);
    ::close(status[0]);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    char go_byte = 0;
    ssize_t n;
    do n = ::read(go[0], &go_byte, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) _exit(127);  // the parent gave up before release()
    if (stdout_fd >= 0 && ::dup2(stdout_fd, STDOUT_FILENO) < 0) {
      const int e = errno;
      (void)!::write(status[1], &e, sizeof e);
      _exit(127);
    }
    ::execv(path_.c_str(), args.data());
    const int e = errno;
    (void)!::write(status[1], &e, sizeof e);
    _exit(127);
  }
  ::close(go[0]);
  ::close(status[1]);
  go_write_ = go[1];
  status_read_ = status[0];
}

ChildProcess::~ChildProcess() {
  close_fd(go_write_);  // a held child reads end of file and leaves
  close_fd(status_read_);
  if (pid_ > 0 && !exit_) {
    if (poll()) return;
    ::kill(pid_, SIGKILL);
    wait();
  }
}

void ChildProcess::release() {
  const char go = 1;
  ssize_t n;
  do n = ::write(go_write_, &go, 1);
  while (n < 0 && errno == EINTR);
  close_fd(go_write_);
  int error = 0;
  std::size_t got = 0;
  while (got < sizeof error) {
    n = ::read(status_read_, reinterpret_cast<char*>(&error) + got, sizeof error - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close_fd(status_read_);
  if (got == sizeof error) {
    wait();
    throw InputError("cannot run '" + argv_[0] + "' (" + path_ + "): " + std::strerror(error));
  }
}

std::optional<ChildExit> ChildProcess::poll() {
  if (exit_ || pid_ <= 0) return exit_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_ = exit_of(status);
  return exit_;
}

ChildExit ChildProcess::wait() {
  while (!exit_) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, 0);
    if (r == pid_) exit_ = exit_of(status);
    else if (r < 0 && errno != EINTR) throw RuntimeError(std::string("waitpid: ") + std::strerror(errno));
  }
  return *exit_;
}

void ChildProcess::signal(int sig) {
  if (!exit_ && pid_ > 0) ::kill(pid_, sig);
}

}  // namespace plexus

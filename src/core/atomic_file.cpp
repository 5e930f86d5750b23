// Temporary file + fsync + rename, and the writable-directory probe.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace plexus {

namespace {

// A temporary file of a dead pid and unlocked is removed only once it is this old.
constexpr long kStaleAfterSeconds = 10;

std::string reason(int err) {
  if (err == ENOSPC || err == EDQUOT) return std::string(std::strerror(err)) + " (disk full: free space or choose another directory)";
  return std::strerror(err);
}

std::string directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);  // best effort: the rename is already visible to every reader
  ::close(fd);
}

// The writer's pid in an AtomicFile temporary name ".NAME.tmp-PID-N", or -1 for other names.
pid_t temp_writer_pid(const std::string& name) {
  if (!is_atomic_temp_name(name)) return -1;
  const std::string tail = name.substr(name.rfind(".tmp-") + 5);  // "PID-N"
  const std::size_t dash = tail.find('-');
  const auto digits = [](const std::string& t) {
    return !t.empty() && t.size() <= 12 && t.find_first_not_of("0123456789") == std::string::npos;
  };
  if (dash == std::string::npos || !digits(tail.substr(0, dash)) || !digits(tail.substr(dash + 1))) return -1;
  return static_cast<pid_t>(std::stoll(tail.substr(0, dash)));
}

// Whether a temporary file was last written long enough ago to be a dead writer's (a clock that
// went back, or a time in the future, counts as fresh).
bool old_enough(const struct stat& st) {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return now.tv_sec - st.st_mtim.tv_sec >= kStaleAfterSeconds;
}

// `temp` created and flock'ed, as one step where the kernel allows: an unnamed file (O_TMPFILE)
// is locked, then linked under its name, so the name never appears unlocked. Elsewhere (a file
// system without O_TMPFILE, no /proc) created, then locked at once: the age rule of
// remove_stale_temporaries covers that instant. -1 with errno set on failure; EEXIST when the
// name is taken.
int create_locked(const std::string& temp) {
  const std::string dir = directory_of(temp);
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    if (::flock(fd, LOCK_EX) == 0 && ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) == 0) return fd;
    const int err = errno;
    ::close(fd);
    if (err == EEXIST) {
      errno = EEXIST;
      return -1;
    }
  }
  const int plain = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (plain >= 0) ::flock(plain, LOCK_EX);
  return plain;
}

}  // namespace

int remove_stale_temporaries(const std::string& dir) {
  int removed = 0;
  std::error_code ec;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const pid_t pid = temp_writer_pid(name);
    if (pid <= 0) continue;
    // Only a pid with no process at all is dead: a live one (EPERM included) may still be
    // writing, and this process's own are its live writers' (its counter never repeats a name;
    // one left by an earlier process of the same pid is taken over by the constructor).
    if (pid == ::getpid() || !(::kill(pid, 0) != 0 && errno == ESRCH)) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    // An AtomicFile holds an exclusive lock on its temporary file from its creation until it is
    // renamed (seen across pid namespaces too, where the pid test above cannot tell): a file
    // nobody holds is a dead writer's, once it is old enough that no writer can be between
    // creating it and locking it (where the name cannot appear locked).
    struct stat st {};
    struct stat now_named {};
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && old_enough(st) &&
        ::lstat(e.path().c_str(), &now_named) == 0 && now_named.st_dev == st.st_dev && now_named.st_ino == st.st_ino &&
        ::unlink(e.path().c_str()) == 0)
      ++removed;
    ::close(fd);
  }
  return removed;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path p(path_);
  remove_stale_temporaries(directory_of(path_));
  temp_ = (p.parent_path() / ("." + p.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                              std::to_string(counter++)))
              .string();
  // Locked from its creation to its rename (remove_stale_temporaries leaves a locked file alone).
  fd_ = create_locked(temp_);
  if (fd_ < 0 && errno == EEXIST) {
    // Left by a killed process that had this pid before: this process's counter never made it.
    ::unlink(temp_.c_str());
    fd_ = create_locked(temp_);
  }
  if (fd_ < 0) {
    const int err = errno;
    throw RuntimeError("cannot write '" + path_ + "': " + reason(err));
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  committed_ = true;  // nothing left to clean up
  throw RuntimeError(what + " '" + path_ + "' failed: " + reason(err) + "; the file was not written");
}

void AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) throw RuntimeError("'" + path_ + "': write after commit");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("writing", n < 0 ? errno : ENOSPC);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw RuntimeError("'" + path_ + "': committed twice");
  if (::fsync(fd_) != 0 && errno != EINVAL) fail("writing", errno);
  // Renamed while still locked: until it has its final name, another writer's
  // remove_stale_temporaries must see it held (its pid may be in another pid namespace).
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) fail("renaming the finished file onto", errno);
  committed_ = true;
  ::close(fd_);  // the bytes are on disk (fsync above): nothing left for close to report
  fd_ = -1;
  sync_directory(directory_of(path_));
}

void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text);
  f.commit();
}

bool is_atomic_temp_name(const std::string& name) { return !name.empty() && name[0] == '.' && name.find(".tmp-") != std::string::npos; }

void ensure_writable_dir(const std::string& dir, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw InputError(what + " '" + dir + "': cannot create the directory" + (ec ? ": " + ec.message() : std::string(": not a directory")) +
                     "; choose a writable directory");
  }
  const std::string probe = (std::filesystem::path(dir) / (".plexus-write-test-" + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    errno = 0;
    if (::write(fd, "x", 1) != 1) err = errno != 0 ? errno : ENOSPC;
    ::close(fd);
    ::unlink(probe.c_str());
  }
  if (err == ENOSPC || err == EDQUOT) throw RuntimeError(what + " '" + dir + "': cannot write there: " + reason(err));
  if (err != 0) throw InputError(what + " '" + dir + "': cannot write there: " + std::strerror(err) + "; choose a writable directory");
}

}  // namespace plexus

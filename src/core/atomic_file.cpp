// Temporary file + fsync + rename, and the writable-directory probe.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace plexus {

namespace {

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

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path p(path_);
  temp_ = (p.parent_path() / ("." + p.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                              std::to_string(counter++)))
              .string();
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
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
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    fail("writing", err);
  }
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) fail("renaming the finished file onto", errno);
  committed_ = true;
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

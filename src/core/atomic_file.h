// Files that appear whole or not at all: written to a temporary name in the same directory,
// flushed to disk (fsync) and renamed into place, locked from its creation to its rename; a
// failure removes the temporary file, and the next writer in the directory removes those of
// killed processes.
#pragma once
#include <string>
#include <string_view>

namespace plexus {

// One file being written. Nothing appears under `path` until commit(); destroying an uncommitted
// AtomicFile (an error, an interrupt unwinding) removes the temporary file.
class AtomicFile {
 public:
  // Creates PATH's temporary sibling (".NAME.tmp-PID-N"), flock'ed as it appears (O_TMPFILE, then
  // linked under that name; where the file system cannot, created and locked at once);
  // RuntimeError naming `path` on failure.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // RuntimeError naming `path` (and saying "disk full" for ENOSPC) when the bytes cannot be written.
  void write(std::string_view bytes);
  // fsync, rename onto `path` (replacing an older file atomically) still locked, then close.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_; }

 private:
  [[noreturn]] void fail(const std::string& what, int err);
  std::string path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `text` as `path`, atomically (see AtomicFile).
void write_file_atomically(const std::string& path, std::string_view text);

// True for names AtomicFile uses for its temporary files (".NAME.tmp-...").
bool is_atomic_temp_name(const std::string& file_name);

// Removes from `dir` the temporary files of AtomicFile writers that were killed (SIGKILL, power
// loss): ".NAME.tmp-PID-N" regular files whose process PID no longer exists, that no AtomicFile
// holds locked (each holds an flock on its own from its creation to its rename) and that were
// last written at least 10 s ago (a writer in another pid namespace, whose pid looks dead here,
// may be between creating its file and locking it). Every AtomicFile
// calls it for its directory before it creates its own, so a killed `plexus quantize` leaves
// nothing once the next writer runs there. Returns how many it removed.
int remove_stale_temporaries(const std::string& dir);

// Makes `dir` (and parents) and proves it writable by creating and removing a probe file, so a
// run finds a bad output directory before it measures anything. InputError naming `dir` and
// `what` (e.g. "--output-dir") when it cannot be created or written; RuntimeError when its disk
// is full.
void ensure_writable_dir(const std::string& dir, const std::string& what);

}  // namespace plexus

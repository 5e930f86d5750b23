// Durable JSON-lines journal: write + fdatasync per line, torn-tail repair on open.
#include "batch/journal.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace plexus::batch {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string read_all(int fd, const std::string& path) {
  std::string data;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw RuntimeError("cannot read '" + path + "': " + errno_text());
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  return data;
}

bool parses_as_object(const std::string& line, const std::string& path) {
  try {
    return parse_json(line, path).is_object();
  } catch (const InputError&) {
    return false;
  }
}

// Makes the file's directory entry durable (a newly created journal survives a crash).
void sync_parent(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (d < 0) return;
  ::fsync(d);
  ::close(d);
}

}  // namespace

Journal::Journal(std::string path, Mode mode, const JournalFormat* format) : path_(std::move(path)) {
  const bool existed = std::filesystem::exists(path_);
  const int flags = O_RDWR | O_CREAT | O_CLOEXEC | (mode == Mode::kTruncate ? O_TRUNC : 0);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) throw RuntimeError("cannot open '" + path_ + "' for writing: " + errno_text());
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw InputError("'" + path_ + "' is not a regular file: results need a file they can be appended to and resumed from");
  }
  // One writer at a time: a second run on the same file would write ids twice.
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string why = errno == EWOULDBLOCK ? "another process (a plexus batch run?) is writing it" : errno_text();
    ::close(fd_);
    fd_ = -1;
    throw RuntimeError("cannot lock '" + path_ + "': " + why);
  }
  // A refused file is closed (and unlocked) before the error leaves: the destructor does not run.
  try {
    open_locked(mode, format, existed);
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

void Journal::open_locked(Mode mode, const JournalFormat* format, bool existed) {
  if (!existed) sync_parent(path_);
  if (mode == Mode::kTruncate) {
    if (::fdatasync(fd_) != 0) throw RuntimeError("cannot sync '" + path_ + "': " + errno_text());
    if (format) append_line(format->header_line);
    return;
  }
  const std::string data = read_all(fd_, path_);
  // Complete lines end with '\n'; what follows the last one is a torn write.
  std::size_t keep = data.rfind('\n');
  keep = keep == std::string::npos ? 0 : keep + 1;
  std::vector<std::pair<std::size_t, std::size_t>> lines;  // [begin, end) without '\n'
  for (std::size_t b = 0; b < keep;) {
    const std::size_t e = data.find('\n', b);
    lines.emplace_back(b, e);
    b = e + 1;
  }
  const auto text_of = [&](std::size_t i) { return data.substr(lines[i].first, lines[i].second - lines[i].first); };
  // A last complete line that is not JSON is torn too (e.g. zeros after a crash).
  if (!lines.empty() && !parses_as_object(text_of(lines.size() - 1), path_)) {
    keep = lines.back().first;
    lines.pop_back();
  }
  std::vector<Json> found;
  std::vector<std::size_t> found_line;  // 1-based line of each
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string text = text_of(i);
    if (text.empty()) continue;
    Json j;
    try {
      j = parse_json(text, path_ + ":" + std::to_string(i + 1));
    } catch (const InputError&) {
    }
    if (!j.is_object()) {
      throw InputError(path_ + ":" + std::to_string(i + 1) +
                       ": not a JSON object, so this is not a file plexus batch wrote; move it away or pass another --output");
    }
    found.push_back(std::move(j));
    found_line.push_back(i + 1);
  }
  // Only a file this journal wrote is resumed (and cut): nothing is touched before this check.
  bool add_header = false;
  if (format) {
    const bool headed = !found.empty() && found.front().contains(format->header_key);
    if (headed) {
      // Header lines are markers, never records (a copy pasted in twice included).
      std::erase_if(found, [&](const Json& j) { return j.contains(format->header_key); });
    } else if (found.empty()) {
      // Empty, or a header torn by a crash while it was written; anything else (a one-line
      // file that is not JSON, say) is not ours to cut.
      const std::string first = format->header_line + "\n";
      if (data.size() > first.size() || first.compare(0, data.size(), data) != 0) {
        throw InputError(path_ + ": holds no plexus batch result and does not start with the {\"" + format->header_key +
                         "\": ...} line that plexus writes first: this file was not written by plexus batch; nothing was "
                         "changed; pass another --output");
      }
      add_header = true;
    } else {
      for (std::size_t i = 0; i < found.size(); ++i) {
        if (format->legacy_line && format->legacy_line(found[i])) continue;
        throw InputError(path_ + ":" + std::to_string(found_line[i]) + ": not one of " + format->what +
                         ", and the file does not start with the {\"" + format->header_key +
                         "\": ...} line that plexus writes first (" + found[i].dump().substr(0, 80) +
                         "); this file was not written by plexus batch (is it the input?): nothing was changed; pass another --output");
      }
    }
  }
  existing_ = std::move(found);
  if (keep < data.size()) {
    torn_bytes_ = data.size() - keep;
    if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0 || ::fdatasync(fd_) != 0) {
      throw RuntimeError("cannot cut the torn last line of '" + path_ + "': " + errno_text());
    }
  }
  if (::lseek(fd_, 0, SEEK_END) < 0) throw RuntimeError("cannot seek in '" + path_ + "': " + errno_text());
  if (add_header) append_line(format->header_line);
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const Json& record) { append_line(record.dump(-1, ' ', false, Json::error_handler_t::replace)); }

void Journal::append_line(const std::string& json_text) {
  const std::string line = json_text + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw RuntimeError("cannot write to '" + path_ + "': " + errno_text());
    done += static_cast<std::size_t>(n);
  }
  if (::fdatasync(fd_) != 0) throw RuntimeError("cannot sync '" + path_ + "': " + errno_text());
}

}  // namespace plexus::batch

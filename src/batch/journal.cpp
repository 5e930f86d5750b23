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
  if (format) check_format(*format, data, found, found_line);
  existing_ = std::move(found);
  if (keep < data.size()) {
    torn_bytes_ = data.size() - keep;
    if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0 || ::fdatasync(fd_) != 0) {
      throw RuntimeError("cannot cut the torn last line of '" + path_ + "': " + errno_text());
    }
  }
  if (::lseek(fd_, 0, SEEK_END) < 0) throw RuntimeError("cannot seek in '" + path_ + "': " + errno_text());
}

void Journal::check_format(const JournalFormat& format, const std::string& data, std::vector<Json>& found,
                           const std::vector<std::size_t>& found_line) const {
  const bool has_old_header = !format.old_header_key.empty();
  const bool old_headed = has_old_header && !found.empty() && found.front().contains(format.old_header_key);
  if (found.empty()) {
    // No complete line: empty, or the first record (or an older version's header) torn by a crash
    // while it was written. Anything else (one line of notes, one request) is not ours to cut.
    const auto starts = [&](const std::string& known) {
      const std::size_t n = std::min(known.size(), data.size());
      return known.compare(0, n, data, 0, n) == 0;
    };
    if (data.empty() || starts(format.record_prefix) || (has_old_header && starts(format.old_header_line + "\n"))) return;
    throw InputError(path_ + ": holds no complete line and does not start as " + format.what +
                     " do: this file was not written by plexus batch; nothing was changed; pass another --output");
  }
  for (std::size_t i = 0; i < found.size(); ++i) {
    // The old header (a copy pasted in twice included) marks the file, it is not a record.
    if (old_headed && found[i].contains(format.old_header_key)) continue;
    if (format.is_record(found[i])) continue;
    throw InputError(path_ + ":" + std::to_string(found_line[i]) + ": not one of " + format.what + " (" +
                     found[i].dump().substr(0, 80) +
                     "); this file was not written by plexus batch (is it the input?): nothing was changed; pass another --output");
  }
  if (old_headed) std::erase_if(found, [&](const Json& j) { return j.contains(format.old_header_key); });
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

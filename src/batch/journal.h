// A JSON-lines file that only grows, one durable line per record: each append is one write of
// the whole line plus fdatasync before it returns. Opening an existing journal keeps every
// complete line and cuts a torn last line (a crash in the middle of a write).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus::batch {

// What makes a file this kind of journal: `header_line` is the first line of every new file (a
// JSON object, without the newline; `header_key` is the key that marks it), and a file without it is resumed only when
// every line passes `legacy_line` (files written before the header existed).
struct JournalFormat {
  std::string header_line;
  std::string header_key;
  std::function<bool(const Json&)> legacy_line;
  std::string what;  // "plexus batch results", for errors
};

class Journal {
 public:
  enum class Mode { kResume, kTruncate };
  // kResume: reads the lines already there (InputError "PATH:LINE: ..." for a line before the
  // last that is not a JSON object: not a journal plexus wrote), cuts a torn last line (no final
  // newline, or not JSON); kTruncate: starts empty. Creates the file (and syncs its directory).
  // Holds an exclusive flock while open: RuntimeError when another process holds it.
  // With `format`: a new (or empty) file starts with its header line, and an existing one is
  // refused (InputError, nothing touched) unless it starts with the header or is a legacy file;
  // existing() never holds the header.
  Journal(std::string path, Mode mode, const JournalFormat* format = nullptr);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<Json>& existing() const { return existing_; }  // lines found at open
  std::uint64_t torn_bytes() const { return torn_bytes_; }          // cut at open
  // Appends `record` as one line; durable when this returns (RuntimeError when it cannot be).
  void append(const Json& record);
  // The same for a record already serialised as one line of JSON (no newline).
  void append_line(const std::string& json_text);

 private:
  // The constructor's work once the file is open and locked: check, read, cut, write the header.
  void open_locked(Mode mode, const JournalFormat* format, bool existed);

  std::string path_;
  int fd_ = -1;
  std::vector<Json> existing_;
  std::uint64_t torn_bytes_ = 0;
};

}  // namespace plexus::batch

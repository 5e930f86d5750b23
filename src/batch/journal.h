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

// What makes a file this kind of journal: every record line starts with `record_prefix` (the
// record's marker field, written first) and passes `is_record` (which may also accept the
// unmarked records of older versions). Files an older version began with `old_header_line` (a
// JSON object marked by `old_header_key`) are resumed with that line kept and skipped (an empty
// key: the format never had a header).
struct JournalFormat {
  std::string record_prefix;
  std::function<bool(const Json&)> is_record;
  std::string old_header_line;
  std::string old_header_key;
  std::string what;  // "plexus batch's result lines (...)", for errors
};

class Journal {
 public:
  enum class Mode { kResume, kTruncate };
  // kResume: reads the lines already there (InputError "PATH:LINE: ..." for a line before the
  // last that is not a JSON object: not a journal plexus wrote), cuts a torn last line (no final
  // newline, or not JSON); kTruncate: starts empty. Creates the file (and syncs its directory).
  // Holds an exclusive flock while open: RuntimeError when another process holds it.
  // With `format`: an existing file is refused (InputError, nothing touched) unless every
  // complete line is a record (after an old header line), or it holds no complete line and what
  // it holds is the start of a record or of the old header (a crash during the first write);
  // existing() holds only records.
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
  // The constructor's work once the file is open and locked: read, check, cut a torn tail.
  void open_locked(Mode mode, const JournalFormat* format, bool existed);
  // InputError unless `data` (the file, read at open) is a journal of `format`; drops the old
  // header from `found` (its complete lines, numbered by `found_line`).
  void check_format(const JournalFormat& format, const std::string& data, std::vector<Json>& found,
                    const std::vector<std::size_t>& found_line) const;

  std::string path_;
  int fd_ = -1;
  std::vector<Json> existing_;
  std::uint64_t torn_bytes_ = 0;
};

}  // namespace plexus::batch

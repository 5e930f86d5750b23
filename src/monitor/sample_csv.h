// Streams samples to a CSV file as they come: one row per device per sample, empty cells for
// values a source could not read. Each sample's rows go out in one write; when a write fails
// (disk full) the file is cut back to its last complete row and the error is kept, so the file
// never ends in a torn row.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "monitor/reading.h"

namespace plexus {

class SampleCsv {
 public:
  // Creates `path` and writes the header; throws RuntimeError naming the path on failure.
  explicit SampleCsv(const std::string& path);
  ~SampleCsv();
  SampleCsv(const SampleCsv&) = delete;
  SampleCsv& operator=(const SampleCsv&) = delete;

  // Appends the sample's rows (in the file at once, so a crash keeps what was measured). Returns
  // false, and writes nothing more, once a write has failed (see error()).
  bool write(const Sample& sample);
  // "writing the monitoring CSV 'PATH' failed: No space left on device ..." after a failure.
  const std::optional<std::string>& error() const { return error_; }

  static const char* header();
  // The rows of one sample, each ending in '\n'.
  static std::string rows(const Sample& sample);

 private:
  bool append(const std::string& text);
  std::string path_;
  int fd_ = -1;
  std::int64_t complete_bytes_ = 0;  // the file's length after its last complete write
  std::optional<std::string> error_;
};

}  // namespace plexus

// A read-only memory-mapped file: weights are used in place, never copied.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace plexus {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws InputError naming the path when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Maps every page of the file into this process now, so that reading it later takes no page
  // faults (the first forward pass otherwise pays them): MADV_POPULATE_READ (Linux >= 5.14), else
  // one byte read per page. Pages not yet in the page cache are read from disk here. Only when
  // the file fits in half of the free memory, like the read-ahead at mapping; returns whether it
  // prefaulted.
  bool prefault() const;

 private:
  void reset();
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// Whole file as a string; throws InputError naming the path.
std::string read_text_file(const std::string& path);
// Whole file as a string, or "" when it cannot be read (for /proc and /sys probes that may be absent).
std::string read_text_file_or_empty(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace plexus

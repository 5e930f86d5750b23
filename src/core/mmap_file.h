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

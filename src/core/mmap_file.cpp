// mmap-backed read-only files and small whole-file reads.
#include "core/mmap_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace plexus {

namespace {
bool fits_in_half_of_free_memory(std::size_t bytes) {
  const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 && bytes < static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 2;
}
#ifndef MADV_POPULATE_READ
constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14; older headers lack the name
#endif
}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError("'" + path + "' is not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw InputError("cannot map '" + path + "': " + std::strerror(err));
    }
    data_ = static_cast<const std::uint8_t*>(p);
    // Weights are read front to back, all of them: when the file fits in free memory, ask the
    // kernel to start reading ahead now rather than fault page by page in the first forward
    // pass. (A file larger than free memory is left to demand paging: disk offload.)
    if (fits_in_half_of_free_memory(size_)) ::madvise(p, size_, MADV_WILLNEED);
  }
  ::close(fd);
}

MappedFile::~MappedFile() { reset(); }

bool MappedFile::prefault() const {
  if (size_ == 0 || !fits_in_half_of_free_memory(size_)) return false;
  if (::madvise(const_cast<std::uint8_t*>(data_), size_, MADV_POPULATE_READ) == 0) return true;
  // A kernel without MADV_POPULATE_READ (EINVAL): fault each page in by reading one byte of it.
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::uint8_t sum = 0;
  for (std::size_t i = 0; i < size_; i += page) sum ^= static_cast<const volatile std::uint8_t*>(data_)[i];
  static_cast<void>(sum);
  return true;
}

MappedFile::MappedFile(MappedFile&& o) noexcept : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    reset();
    path_ = std::move(o.path_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void MappedFile::reset() {
  if (data_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_text_file_or_empty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace plexus

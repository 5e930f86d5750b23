// safetensors files: header parsing with full validation, tensors viewed in place in the mmap.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mmap_file.h"

namespace plexus {

// One tensor's header entry. `dtype_supported` is false for dtypes plexus does not compute with
// (I64, U8, ...): such tensors may sit in a checkpoint, but using one is an error.
struct TensorInfo {
  std::string name;
  std::string dtype_name;            // as written in the header, e.g. "BF16"
  DType dtype = DType::kF32;
  bool dtype_supported = true;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte range within the data section
  std::int64_t numel() const;
};

// Parses and validates a safetensors header held in `bytes` (the whole file, or at least its
// header when `file_size` says how big the file is). `where` names the file in errors. Checks:
// header length within the file, valid JSON object, known fields, shape × dtype size equal to
// the byte range, ranges inside the data section and not overlapping.
std::vector<TensorInfo> parse_safetensors_header(const std::uint8_t* bytes, std::size_t available,
                                                 std::uint64_t file_size, const std::string& where,
                                                 std::uint64_t* data_start);

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // maps and validates; InputError on failure

  const std::string& path() const { return file_.path(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;
  const void* data(const TensorInfo& t) const { return file_.data() + data_start_ + t.begin; }
  // Maps the whole file in now (MappedFile::prefault); returns whether it did.
  bool prefault() const { return file_.prefault(); }

 private:
  MappedFile file_;
  std::uint64_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::size_t> by_name_;
};

}  // namespace plexus

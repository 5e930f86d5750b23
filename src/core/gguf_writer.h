// Writes GGUF v3 files (llama.cpp's model format) as a stream: metadata key/values in insertion
// order, the tensor table, then each tensor's bytes produced by a callback when its turn comes,
// so a file far larger than memory is written one tensor at a time, atomically (core/atomic_file).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/gguf_file.h"

namespace plexus {

// GGUF's metadata value type codes.
enum class GgufType : std::uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// Typed metadata values (GgufValue with its gguf_type / elem_type set).
GgufValue gguf_int(GgufType type, std::int64_t v);  // any of the integer types
inline GgufValue gguf_u32(std::uint32_t v) { return gguf_int(GgufType::kU32, v); }
inline GgufValue gguf_i32(std::int32_t v) { return gguf_int(GgufType::kI32, v); }
inline GgufValue gguf_u64(std::uint64_t v) { return gguf_int(GgufType::kU64, static_cast<std::int64_t>(v)); }
GgufValue gguf_f32(float v);
GgufValue gguf_bool(bool v);
GgufValue gguf_string(std::string v);
GgufValue gguf_string_array(std::vector<std::string> v);
GgufValue gguf_int_array(GgufType elem_type, const std::vector<std::int64_t>& v);
GgufValue gguf_f32_array(const std::vector<float>& v);

class GgufWriter {
 public:
  // Fills exactly the tensor's byte count at dst.
  using FillFn = std::function<void(void* dst)>;
  // Called before each tensor's data is produced (index in insertion order); may throw to stop
  // (e.g. Interrupted), which leaves nothing at the output path.
  using ProgressFn = std::function<void(std::size_t index, const std::string& name)>;

  explicit GgufWriter(std::uint32_t alignment = 32);

  // A metadata key/value; InputError for a duplicate key or a value whose type codes are not
  // GGUF's. general.alignment is written first by write() when not added (and alignment != 32).
  void add(const std::string& key, GgufValue value);
  // A tensor: name, dims in GGUF order (innermost first), ggml type code and its byte count, and
  // the callback that produces the bytes. InputError for a duplicate name or an empty dim list.
  void add_tensor(const std::string& name, std::vector<std::int64_t> dims, std::uint32_t ggml_type,
                  std::uint64_t bytes, FillFn fill);

  std::size_t tensor_count() const { return tensors_.size(); }
  // The whole file's size once written.
  std::uint64_t file_size() const;

  // Streams the file to a temporary sibling of `path` and renames it into place when complete.
  // RuntimeError naming `path` when it cannot be written; nothing appears at `path` on failure.
  void write(const std::string& path, const ProgressFn& progress = nullptr) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<std::int64_t> dims;
    std::uint32_t ggml_type;
    std::uint64_t bytes;
    std::uint64_t offset;  // from the data section's start
    FillFn fill;
  };
  std::string header() const;  // magic to the end of the tensor table, padded to the alignment
  std::uint32_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  std::uint64_t data_size_ = 0;
};

}  // namespace plexus

// GGUF v3 files (the format of llama.cpp's models): the header, the metadata key/values and the
// tensor table parsed with full validation from a memory-mapped file; tensor data viewed in place.
// Every malformed file is an InputError naming the file, the byte offset and the field.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mmap_file.h"

namespace plexus {

// One metadata value. GGUF's integer types all land in `i` (uint64 values above INT64_MAX are
// an error), float32/float64 in `f`, bool in `b`, strings in `s`; arrays in `arr` (element type
// in `elem_type`), nested arrays allowed.
struct GgufValue {
  enum class Type { kInt, kFloat, kBool, kString, kArray };
  Type type = Type::kInt;
  std::uint32_t gguf_type = 0;      // the type code in the file (0..12)
  std::int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::uint32_t elem_type = 0;      // arrays: the element type code
  std::vector<GgufValue> arr;
};

struct GgufTensor {
  std::string name;                 // as in the file, e.g. "blk.0.attn_q.weight"
  std::vector<std::int64_t> dims;   // GGUF order: dims[0] is the innermost (contiguous) one
  std::uint32_t ggml_type = 0;      // the type code in the file
  DType dtype = DType::kF32;        // when `supported`
  bool supported = false;           // F32, F16, BF16 and the block formats (kBlockFormats)
  std::uint64_t offset = 0;         // from the start of the data section
  std::uint64_t bytes = 0;
  std::int64_t numel() const;
};

class GgufFile {
 public:
  // Maps and validates PATH: magic, version 3 (2 also read), counts within the file, every
  // key/value and tensor record inside the file, known value types, tensor types known with
  // their data inside the data section, aligned and not overlapping. InputError otherwise.
  explicit GgufFile(const std::string& path);
  // The same checks on bytes in memory (tests, fuzzing); NAME stands for the path in messages.
  GgufFile(const std::string& name, std::vector<std::uint8_t> bytes);
  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;

  const std::string& path() const { return path_; }
  std::size_t size() const { return size_; }       // bytes of the whole file
  std::uint32_t version() const { return version_; }
  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  const GgufValue* find(const std::string& key) const;  // null when absent
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(const std::string& name) const;  // null when absent
  const void* data(const GgufTensor& t) const { return base_ + data_start_ + t.offset; }
  std::uint64_t data_start() const { return data_start_; }
  // Maps the whole file in now (MappedFile::prefault); returns whether it did.
  bool prefault() const { return file_.prefault(); }

  // Typed reads of metadata; InputError naming the file and key when present with another type.
  std::optional<std::int64_t> get_int(const std::string& key) const;
  std::optional<double> get_float(const std::string& key) const;  // ints are accepted too
  std::optional<bool> get_bool(const std::string& key) const;
  std::optional<std::string> get_string(const std::string& key) const;
  // The same, InputError naming the file and key when absent.
  std::int64_t require_int(const std::string& key) const;
  std::string require_string(const std::string& key) const;
  // Length of an array value (null when absent; InputError when not an array).
  std::optional<std::size_t> array_length(const std::string& key) const;

  // Whether PATH is a file that starts with the GGUF magic.
  static bool is_gguf(const std::string& path);

 private:
  void parse();
  std::string path_;
  MappedFile file_;
  std::vector<std::uint8_t> owned_;  // in-memory files only
  const std::uint8_t* base_ = nullptr;
  std::size_t size_ = 0;
  std::uint32_t version_ = 0;
  std::uint64_t data_start_ = 0;
  std::map<std::string, GgufValue> kv_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, std::size_t> by_name_;
};

// The ggml type code of a DType (F32 0, F16 1, Q4_0 2, Q8_0 8, Q4_K 12, Q6_K 14, BF16 30), and back.
std::uint32_t ggml_type_of(DType t);
bool dtype_of_ggml_type(std::uint32_t ggml_type, DType* out);
// "F32", "Q4_K", "IQ2_XXS" ... for the ggml types the reader knows; "type N" otherwise.
std::string ggml_type_name(std::uint32_t ggml_type);
// The chat template stored in the file (`tokenizer.chat_template`), when there is one.
std::optional<std::string> gguf_chat_template(const GgufFile& file);

}  // namespace plexus

// GGUF v3 parsing and validation (see gguf_file.h): every count, length and offset is checked
// against the bytes that remain before anything is allocated or read.
#include "core/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "core/checked.h"
#include "core/error.h"

namespace plexus {

namespace {

constexpr std::uint32_t kGgufMagic = 0x46554747;  // "GGUF" read little-endian
constexpr std::uint32_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;
constexpr std::uint64_t kDefaultAlignment = 32;

// GGUF metadata value type codes.
enum : std::uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12, kNumValueTypes = 13
};

const char* value_type_name(std::uint32_t t) {
  static const char* const kNames[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                       "bool", "string", "array", "uint64", "int64", "float64"};
  return t < kNumValueTypes ? kNames[t] : "unknown";
}

// Smallest encoding of a value of each type (bytes): bounds an array's element count.
std::uint64_t min_value_bytes(std::uint32_t t) {
  switch (t) {
    case kU8: case kI8: case kBool: return 1;
    case kU16: case kI16: return 2;
    case kU32: case kI32: case kF32: return 4;
    case kU64: case kI64: case kF64: return 8;
    case kString: return 8;   // the length
    case kArray: return 12;   // element type + count
    default: return 1;
  }
}

// ggml tensor types: name, elements per block, bytes per block. Types plexus cannot run are
// known by size so that a file holding them still validates (they fail only when used).
struct GgmlType {
  std::uint32_t code;
  const char* name;
  std::uint64_t block_elems;
  std::uint64_t block_bytes;
};
constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4},          {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},       {7, "Q5_1", 32, 24},       {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},     {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},    {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},    {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},         {27, "I64", 1, 8},         {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},        {34, "TQ1_0", 256, 54},    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
};

const GgmlType* find_ggml_type(std::uint32_t code) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.code == code) return &t;
  return nullptr;
}

// Little-endian cursor over the file's bytes; every read checks the bytes remain.
class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size, const std::string& path) : data_(data), size_(size), path_(path) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t remaining() const { return size_ - pos_; }

  [[noreturn]] void fail(std::uint64_t at, const std::string& field, const std::string& problem) const {
    throw InputError(path_ + ": offset " + std::to_string(at) + ": " + field + ": " + problem +
                     " (not a valid GGUF file: re-download or re-convert it)");
  }
  void need(std::uint64_t n, const std::string& field) const {
    if (n > remaining())
      fail(pos_, field, "needs " + std::to_string(n) + " bytes but the file ends after " + std::to_string(remaining()) +
                            " (truncated file)");
  }
  template <typename T>
  T read(const std::string& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const std::string& field) {
    const std::uint64_t at = pos_;
    if (remaining() < 8) need(8, field + " length");  // the name is built only for the error
    const auto len = read<std::uint64_t>(field);
    if (len > remaining())
      fail(at, field, "string length " + std::to_string(len) + " exceeds the " + std::to_string(remaining()) +
                          " bytes left in the file");
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<std::size_t>(len));
    pos_ += len;
    return s;
  }

 private:
  const std::uint8_t* data_;
  std::uint64_t size_;
  std::uint64_t pos_ = 0;
  const std::string& path_;
};

GgufValue read_value(Reader& r, std::uint32_t type, const std::string& field, int depth) {
  GgufValue v;
  v.gguf_type = type;
  const std::uint64_t at = r.pos();
  switch (type) {
    case kU8: v.i = r.read<std::uint8_t>(field); break;
    case kI8: v.i = r.read<std::int8_t>(field); break;
    case kU16: v.i = r.read<std::uint16_t>(field); break;
    case kI16: v.i = r.read<std::int16_t>(field); break;
    case kU32: v.i = r.read<std::uint32_t>(field); break;
    case kI32: v.i = r.read<std::int32_t>(field); break;
    case kI64: v.i = r.read<std::int64_t>(field); break;
    case kU64: {
      const auto u = r.read<std::uint64_t>(field);
      if (u > static_cast<std::uint64_t>(INT64_MAX)) r.fail(at, field, "uint64 value " + std::to_string(u) + " is above 2^63-1");
      v.i = static_cast<std::int64_t>(u);
      break;
    }
    case kF32: v.type = GgufValue::Type::kFloat; v.f = r.read<float>(field); break;
    case kF64: v.type = GgufValue::Type::kFloat; v.f = r.read<double>(field); break;
    case kBool: {
      const auto b = r.read<std::uint8_t>(field);
      if (b > 1) r.fail(at, field, "bool value " + std::to_string(b) + " is neither 0 nor 1");
      v.type = GgufValue::Type::kBool;
      v.b = b != 0;
      break;
    }
    case kString: v.type = GgufValue::Type::kString; v.s = r.string(field); break;
    case kArray: {
      if (depth >= kMaxArrayDepth) r.fail(at, field, "arrays nested deeper than " + std::to_string(kMaxArrayDepth));
      v.type = GgufValue::Type::kArray;
      v.elem_type = r.read<std::uint32_t>(field + " element type");
      if (v.elem_type >= kNumValueTypes)
        r.fail(at, field, "unknown array element type " + std::to_string(v.elem_type) + " (known: 0..12)");
      const std::uint64_t count_at = r.pos();
      const auto count = r.read<std::uint64_t>(field + " count");
      if (count > r.remaining() / min_value_bytes(v.elem_type))
        r.fail(count_at, field + " count", std::to_string(count) + " " + value_type_name(v.elem_type) +
                                               " elements cannot fit in the " + std::to_string(r.remaining()) +
                                               " bytes left in the file");
      v.arr.reserve(static_cast<std::size_t>(count));
      std::string elem = field;  // "key 'x'[k]", rewritten in place (token lists hold ~10^5 strings)
      const std::size_t keep = elem.size();
      for (std::uint64_t k = 0; k < count; ++k) {
        elem.resize(keep);
        elem += '[';
        elem += std::to_string(k);
        elem += ']';
        v.arr.push_back(read_value(r, v.elem_type, elem, depth + 1));
      }
      break;
    }
    default: r.fail(at, field, "unknown value type " + std::to_string(type) + " (known: 0..12)");
  }
  return v;
}

std::string describe(const GgufValue& v) {
  switch (v.type) {
    case GgufValue::Type::kInt: return "an integer";
    case GgufValue::Type::kFloat: return "a float";
    case GgufValue::Type::kBool: return "a bool";
    case GgufValue::Type::kString: return "a string";
    case GgufValue::Type::kArray: return "an array";
  }
  return "?";
}

std::string describe_value(const GgufValue& v) {
  if (v.type == GgufValue::Type::kInt) return std::to_string(v.i);
  return describe(v);
}

}  // namespace

std::int64_t GgufTensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n = checked_mul(n, d, name + ": element count");
  return n;
}

GgufFile::GgufFile(const std::string& path) : path_(path), file_(path) {
  base_ = file_.data();
  size_ = file_.size();
  parse();
}

GgufFile::GgufFile(const std::string& name, std::vector<std::uint8_t> bytes) : path_(name), owned_(std::move(bytes)) {
  base_ = owned_.data();
  size_ = owned_.size();
  parse();
}

void GgufFile::parse() {
  Reader r(base_, size_, path_);
  const auto magic = r.read<std::uint32_t>("magic");
  if (magic != kGgufMagic) r.fail(0, "magic", "the file does not start with \"GGUF\"");
  version_ = r.read<std::uint32_t>("version");
  if (version_ == 0x03000000 || version_ == 0x02000000)
    r.fail(4, "version", "a big-endian GGUF file; only little-endian files are supported");
  if (version_ != 2 && version_ != 3)
    r.fail(4, "version", "version " + std::to_string(version_) + " is not supported (2 and 3 are)");
  const std::uint64_t tc_at = r.pos();
  const auto tensor_count = r.read<std::uint64_t>("tensor_count");
  const std::uint64_t kc_at = r.pos();
  const auto kv_count = r.read<std::uint64_t>("kv_count");
  // A key/value takes at least 13 bytes (key length, type, a 1-byte value), a tensor record 32.
  if (kv_count > r.remaining() / 13)
    r.fail(kc_at, "kv_count", std::to_string(kv_count) + " key/values cannot fit in the " + std::to_string(r.remaining()) +
                                  " bytes left in the file");
  if (tensor_count > r.remaining() / 32)
    r.fail(tc_at, "tensor_count", std::to_string(tensor_count) + " tensor records cannot fit in the " +
                                      std::to_string(r.remaining()) + " bytes left in the file");

  for (std::uint64_t k = 0; k < kv_count; ++k) {
    const std::uint64_t at = r.pos();
    const std::string field = "key/value #" + std::to_string(k);
    std::string key = r.string(field + " key");
    if (key.empty()) r.fail(at, field + " key", "empty key");
    if (kv_.count(key)) r.fail(at, field + " key", "duplicate key '" + key + "'");
    const std::string vfield = "key '" + key + "'";
    const std::uint64_t type_at = r.pos();
    const auto type = r.read<std::uint32_t>(vfield + " type");
    if (type >= kNumValueTypes) r.fail(type_at, vfield, "unknown value type " + std::to_string(type) + " (known: 0..12)");
    kv_.emplace(std::move(key), read_value(r, type, vfield, 0));
  }

  std::uint64_t alignment = kDefaultAlignment;
  if (const GgufValue* a = find("general.alignment")) {
    if (a->type != GgufValue::Type::kInt || a->i <= 0 || (a->i & (a->i - 1)) != 0 || a->i > (1 << 30))
      r.fail(r.pos(), "key 'general.alignment'", "must be a power-of-two integer (default 32), not " + describe_value(*a));
    alignment = static_cast<std::uint64_t>(a->i);
  }

  tensors_.reserve(static_cast<std::size_t>(tensor_count));
  std::vector<std::uint64_t> record_at;
  for (std::uint64_t k = 0; k < tensor_count; ++k) {
    const std::uint64_t at = r.pos();
    record_at.push_back(at);
    const std::string field = "tensor #" + std::to_string(k);
    GgufTensor t;
    t.name = r.string(field + " name");
    if (t.name.empty()) r.fail(at, field + " name", "empty tensor name");
    const std::string tf = "tensor '" + t.name + "'";
    if (by_name_.count(t.name)) r.fail(at, tf, "duplicate tensor name");
    const std::uint64_t nd_at = r.pos();
    const auto n_dims = r.read<std::uint32_t>(tf + " n_dims");
    if (n_dims < 1 || n_dims > kMaxDims)
      r.fail(nd_at, tf + " n_dims", std::to_string(n_dims) + " dimensions (1.." + std::to_string(kMaxDims) + " allowed)");
    std::uint64_t numel = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const std::uint64_t d_at = r.pos();
      const std::string df = tf + " dims[" + std::to_string(d) + "]";
      const auto dim = r.read<std::uint64_t>(df);
      if (dim < 1 || dim > static_cast<std::uint64_t>(INT64_MAX)) r.fail(d_at, df, "dimension " + std::to_string(dim) + " must be in 1..2^63-1");
      std::uint64_t next = 0;
      if (__builtin_mul_overflow(numel, dim, &next) || next > static_cast<std::uint64_t>(INT64_MAX))
        r.fail(d_at, df, "the element count overflows a 64-bit integer");
      numel = next;
      t.dims.push_back(static_cast<std::int64_t>(dim));
    }
    const std::uint64_t type_at = r.pos();
    t.ggml_type = r.read<std::uint32_t>(tf + " type");
    const GgmlType* gt = find_ggml_type(t.ggml_type);
    if (!gt) r.fail(type_at, tf + " type", "unknown ggml type code " + std::to_string(t.ggml_type));
    if (static_cast<std::uint64_t>(t.dims[0]) % gt->block_elems != 0)
      r.fail(type_at, tf + " type", std::string(gt->name) + " needs dims[0] (" + std::to_string(t.dims[0]) +
                                        ") to be a multiple of its block of " + std::to_string(gt->block_elems));
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(numel / gt->block_elems, gt->block_bytes, &bytes))
      r.fail(type_at, tf + " type", "the tensor's byte size overflows a 64-bit integer");
    t.bytes = bytes;
    t.supported = dtype_of_ggml_type(t.ggml_type, &t.dtype);
    const std::uint64_t off_at = r.pos();
    t.offset = r.read<std::uint64_t>(tf + " offset");
    if (t.offset % alignment != 0)
      r.fail(off_at, tf + " offset", std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment));
    by_name_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  const std::uint64_t end_of_infos = r.pos();
  data_start_ = (end_of_infos + alignment - 1) / alignment * alignment;
  if (tensors_.empty()) return;
  if (data_start_ > size_)
    r.fail(end_of_infos, "data section", "starts at " + std::to_string(data_start_) + " past the end of the file (" +
                                             std::to_string(size_) + " bytes)");
  const std::uint64_t data_bytes = size_ - data_start_;
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    const GgufTensor& t = tensors_[k];
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset)
      r.fail(record_at[k], "tensor '" + t.name + "' data",
             std::to_string(t.bytes) + " bytes at data offset " + std::to_string(t.offset) + " run past the end of the file (the data section holds " +
                 std::to_string(data_bytes) + " bytes; truncated file?)");
  }
  std::vector<std::size_t> order(tensors_.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return tensors_[a].offset < tensors_[b].offset; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const GgufTensor& prev = tensors_[order[k - 1]];
    const GgufTensor& cur = tensors_[order[k]];
    if (cur.offset < prev.offset + prev.bytes)
      r.fail(record_at[order[k]], "tensor '" + cur.name + "' offset",
             "its data at " + std::to_string(cur.offset) + " overlaps tensor '" + prev.name + "' (" +
                 std::to_string(prev.offset) + ".." + std::to_string(prev.offset + prev.bytes) + ")");
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

namespace {
[[noreturn]] void wrong_type(const std::string& path, const std::string& key, const char* want, const GgufValue& v) {
  throw InputError(path + ": metadata '" + key + "': expected " + want + ", found " + describe(v));
}
}  // namespace

std::optional<std::int64_t> GgufFile::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValue::Type::kInt) wrong_type(path_, key, "an integer", *v);
  return v->i;
}

std::optional<double> GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type == GgufValue::Type::kInt) return static_cast<double>(v->i);
  if (v->type != GgufValue::Type::kFloat) wrong_type(path_, key, "a number", *v);
  return v->f;
}

std::optional<bool> GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValue::Type::kBool) wrong_type(path_, key, "a bool", *v);
  return v->b;
}

std::optional<std::string> GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValue::Type::kString) wrong_type(path_, key, "a string", *v);
  return v->s;
}

std::optional<std::size_t> GgufFile::array_length(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValue::Type::kArray) wrong_type(path_, key, "an array", *v);
  return v->arr.size();
}

std::int64_t GgufFile::require_int(const std::string& key) const {
  const auto v = get_int(key);
  if (!v) throw InputError(path_ + ": metadata key '" + key + "' is missing (the file needs it to run the model)");
  return *v;
}

std::string GgufFile::require_string(const std::string& key) const {
  auto v = get_string(key);
  if (!v) throw InputError(path_ + ": metadata key '" + key + "' is missing (the file needs it to run the model)");
  return *v;
}

bool GgufFile::is_gguf(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char magic[4] = {};
  const bool ok = std::fread(magic, 1, 4, f) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  std::fclose(f);
  return ok;
}

std::uint32_t ggml_type_of(DType t) {
  switch (t) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ8_0: return 8;
    case DType::kQ4_K: return 12;
    case DType::kQ6_K: return 14;
    case DType::kBF16: return 30;
    case DType::kQ4_1: return 3;
    case DType::kQ5_0: return 6;
    case DType::kQ5_1: return 7;
    case DType::kQ2_K: return 10;
    case DType::kQ3_K: return 11;
    case DType::kQ5_K: return 13;
    case DType::kIQ4_NL: return 20;
    case DType::kIQ4_XS: return 23;
    case DType::kMXFP4: return 39;
  }
  return 0;
}

bool dtype_of_ggml_type(std::uint32_t ggml_type, DType* out) {
  switch (ggml_type) {
    case 0: *out = DType::kF32; return true;
    case 1: *out = DType::kF16; return true;
    case 2: *out = DType::kQ4_0; return true;
    case 8: *out = DType::kQ8_0; return true;
    case 12: *out = DType::kQ4_K; return true;
    case 14: *out = DType::kQ6_K; return true;
    case 30: *out = DType::kBF16; return true;
    case 3: *out = DType::kQ4_1; return true;
    case 6: *out = DType::kQ5_0; return true;
    case 7: *out = DType::kQ5_1; return true;
    case 10: *out = DType::kQ2_K; return true;
    case 11: *out = DType::kQ3_K; return true;
    case 13: *out = DType::kQ5_K; return true;
    case 20: *out = DType::kIQ4_NL; return true;
    case 23: *out = DType::kIQ4_XS; return true;
    case 39: *out = DType::kMXFP4; return true;
    default: return false;
  }
}

std::string ggml_type_name(std::uint32_t ggml_type) {
  const GgmlType* t = find_ggml_type(ggml_type);
  return t ? std::string(t->name) : "type " + std::to_string(ggml_type);
}

std::optional<std::string> gguf_chat_template(const GgufFile& file) { return file.get_string("tokenizer.chat_template"); }

}  // namespace plexus

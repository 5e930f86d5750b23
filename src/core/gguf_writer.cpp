// GGUF v3 serialisation (see gguf_writer.h): little-endian header, key/values, tensor table,
// aligned tensor data streamed through an AtomicFile.
#include "core/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"

namespace plexus {
namespace {

constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr std::uint32_t kVersion = 3;

bool is_int_type(std::uint32_t t) {
  return t <= static_cast<std::uint32_t>(GgufType::kI32) || t == static_cast<std::uint32_t>(GgufType::kU64) ||
         t == static_cast<std::uint32_t>(GgufType::kI64);
}

std::uint64_t align_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

// Appends little-endian bytes (every target plexus builds for is little-endian).
template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out += s;
}

// The value's payload (after its type code), checked against its type codes.
void put_value(std::string& out, std::uint32_t type, const GgufValue& v, const std::string& key) {
  auto bad = [&](const std::string& why) { throw InputError("GGUF metadata '" + key + "': " + why); };
  switch (type) {
    case 0: put<std::uint8_t>(out, static_cast<std::uint8_t>(v.i)); break;
    case 1: put<std::int8_t>(out, static_cast<std::int8_t>(v.i)); break;
    case 2: put<std::uint16_t>(out, static_cast<std::uint16_t>(v.i)); break;
    case 3: put<std::int16_t>(out, static_cast<std::int16_t>(v.i)); break;
    case 4: put<std::uint32_t>(out, static_cast<std::uint32_t>(v.i)); break;
    case 5: put<std::int32_t>(out, static_cast<std::int32_t>(v.i)); break;
    case 6: put<float>(out, static_cast<float>(v.f)); break;
    case 7: put<std::uint8_t>(out, v.b ? 1 : 0); break;
    case 8: put_string(out, v.s); break;
    case 9:
      if (v.elem_type > 12) bad("unknown array element type " + std::to_string(v.elem_type));
      put<std::uint32_t>(out, v.elem_type);
      put<std::uint64_t>(out, v.arr.size());
      for (const GgufValue& e : v.arr) {
        if (e.gguf_type != v.elem_type) bad("an array element of type " + std::to_string(e.gguf_type) + " in an array of " + std::to_string(v.elem_type));
        put_value(out, e.gguf_type, e, key);
      }
      break;
    case 10: put<std::uint64_t>(out, static_cast<std::uint64_t>(v.i)); break;
    case 11: put<std::int64_t>(out, v.i); break;
    case 12: put<double>(out, v.f); break;
    default: bad("unknown value type " + std::to_string(type));
  }
  const bool kind_ok = (is_int_type(type) && v.type == GgufValue::Type::kInt) ||
                       ((type == 6 || type == 12) && v.type == GgufValue::Type::kFloat) ||
                       (type == 7 && v.type == GgufValue::Type::kBool) || (type == 8 && v.type == GgufValue::Type::kString) ||
                       (type == 9 && v.type == GgufValue::Type::kArray);
  if (!kind_ok) bad("value kind does not match its type code " + std::to_string(type));
}

}  // namespace

GgufValue gguf_int(GgufType type, std::int64_t v) {
  GgufValue g;
  g.type = GgufValue::Type::kInt;
  g.gguf_type = static_cast<std::uint32_t>(type);
  g.i = v;
  return g;
}

GgufValue gguf_f32(float v) {
  GgufValue g;
  g.type = GgufValue::Type::kFloat;
  g.gguf_type = static_cast<std::uint32_t>(GgufType::kF32);
  g.f = v;
  return g;
}

GgufValue gguf_bool(bool v) {
  GgufValue g;
  g.type = GgufValue::Type::kBool;
  g.gguf_type = static_cast<std::uint32_t>(GgufType::kBool);
  g.b = v;
  return g;
}

GgufValue gguf_string(std::string v) {
  GgufValue g;
  g.type = GgufValue::Type::kString;
  g.gguf_type = static_cast<std::uint32_t>(GgufType::kString);
  g.s = std::move(v);
  return g;
}

namespace {
GgufValue array_of(GgufType elem) {
  GgufValue g;
  g.type = GgufValue::Type::kArray;
  g.gguf_type = static_cast<std::uint32_t>(GgufType::kArray);
  g.elem_type = static_cast<std::uint32_t>(elem);
  return g;
}
}  // namespace

GgufValue gguf_string_array(std::vector<std::string> v) {
  GgufValue g = array_of(GgufType::kString);
  g.arr.reserve(v.size());
  for (std::string& s : v) g.arr.push_back(gguf_string(std::move(s)));
  return g;
}

GgufValue gguf_int_array(GgufType elem_type, const std::vector<std::int64_t>& v) {
  GgufValue g = array_of(elem_type);
  g.arr.reserve(v.size());
  for (std::int64_t x : v) g.arr.push_back(gguf_int(elem_type, x));
  return g;
}

GgufValue gguf_f32_array(const std::vector<float>& v) {
  GgufValue g = array_of(GgufType::kF32);
  g.arr.reserve(v.size());
  for (float x : v) g.arr.push_back(gguf_f32(x));
  return g;
}

GgufWriter::GgufWriter(std::uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    throw InputError("GGUF alignment " + std::to_string(alignment) + " is not a power of two");
  }
}

void GgufWriter::add(const std::string& key, GgufValue value) {
  for (const auto& kv : kv_) {
    if (kv.first == key) throw InputError("GGUF metadata key '" + key + "' added twice");
  }
  if (key == "general.alignment" && (value.type != GgufValue::Type::kInt || value.i != alignment_)) {
    throw InputError("GGUF metadata 'general.alignment' must be the writer's alignment " + std::to_string(alignment_));
  }
  std::string probe;
  put_value(probe, value.gguf_type, value, key);  // checks the type codes now, not mid-write
  kv_.emplace_back(key, std::move(value));
}

void GgufWriter::add_tensor(const std::string& name, std::vector<std::int64_t> dims, std::uint32_t ggml_type,
                            std::uint64_t bytes, FillFn fill) {
  if (dims.empty() || dims.size() > 4) throw InputError("GGUF tensor '" + name + "': " + std::to_string(dims.size()) + " dims (1 to 4 allowed)");
  for (std::int64_t d : dims) {
    if (d <= 0) throw InputError("GGUF tensor '" + name + "': dim " + std::to_string(d) + " is not positive");
  }
  for (const Tensor& t : tensors_) {
    if (t.name == name) throw InputError("GGUF tensor '" + name + "' added twice");
  }
  tensors_.push_back(Tensor{name, std::move(dims), ggml_type, bytes, data_size_, std::move(fill)});
  data_size_ = align_up(data_size_ + bytes, alignment_);
}

std::string GgufWriter::header() const {
  std::string h;
  put<std::uint32_t>(h, kMagic);
  put<std::uint32_t>(h, kVersion);
  put<std::uint64_t>(h, tensors_.size());
  const bool has_alignment = std::any_of(kv_.begin(), kv_.end(), [](const auto& kv) { return kv.first == "general.alignment"; });
  const bool add_alignment = !has_alignment && alignment_ != 32;
  put<std::uint64_t>(h, kv_.size() + (add_alignment ? 1 : 0));
  if (add_alignment) {
    put_string(h, "general.alignment");
    put<std::uint32_t>(h, static_cast<std::uint32_t>(GgufType::kU32));
    put<std::uint32_t>(h, alignment_);
  }
  for (const auto& kv : kv_) {
    put_string(h, kv.first);
    put<std::uint32_t>(h, kv.second.gguf_type);
    put_value(h, kv.second.gguf_type, kv.second, kv.first);
  }
  for (const Tensor& t : tensors_) {
    put_string(h, t.name);
    put<std::uint32_t>(h, static_cast<std::uint32_t>(t.dims.size()));
    for (std::int64_t d : t.dims) put<std::uint64_t>(h, static_cast<std::uint64_t>(d));
    put<std::uint32_t>(h, t.ggml_type);
    put<std::uint64_t>(h, t.offset);
  }
  h.resize(align_up(h.size(), alignment_), '\0');
  return h;
}

std::uint64_t GgufWriter::file_size() const { return header().size() + data_size_; }

void GgufWriter::write(const std::string& path, const ProgressFn& progress) const {
  AtomicFile file(path);
  file.write(header());
  std::uint64_t largest = 0;
  for (const Tensor& t : tensors_) largest = std::max(largest, align_up(t.bytes, alignment_));
  std::vector<char> buffer(largest);
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    if (progress) progress(i, t.name);
    const std::uint64_t padded = align_up(t.bytes, alignment_);
    std::fill(buffer.begin() + static_cast<std::ptrdiff_t>(t.bytes), buffer.begin() + static_cast<std::ptrdiff_t>(padded), '\0');
    t.fill(buffer.data());
    file.write(std::string_view(buffer.data(), padded));
  }
  file.commit();
}

}  // namespace plexus

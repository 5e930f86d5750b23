// safetensors: 8-byte little-endian header length, a JSON header, then the raw tensor bytes.
#include "model/safetensors.h"

#include <algorithm>
#include <limits>

#include "core/checked.h"
#include "core/error.h"
#include "core/json.h"

namespace plexus {

std::int64_t TensorInfo::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n = checked_mul(n, d, "the element count of tensor '" + name + "'");
  return n;
}

namespace {

std::size_t element_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

}  // namespace

std::vector<TensorInfo> parse_safetensors_header(const std::uint8_t* bytes, std::size_t available,
                                                 std::uint64_t file_size, const std::string& where,
                                                 std::uint64_t* data_start) {
  if (file_size < 8 || available < 8) {
    throw InputError(where + ": truncated safetensors file (" + std::to_string(file_size) +
                     " bytes, the 8-byte header length is missing)");
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  if (n > file_size - 8 || n > available - 8) {
    throw InputError(where + ": header length " + std::to_string(n) + " runs past the end of the file (" +
                     std::to_string(file_size) + " bytes): the file is truncated or not safetensors");
  }
  if (n > (100u << 20)) throw InputError(where + ": header length " + std::to_string(n) + " exceeds 100 MB");
  const std::string text(reinterpret_cast<const char*>(bytes + 8), static_cast<std::size_t>(n));
  Json header = parse_json(text, where + " (safetensors header)");
  if (!header.is_object()) throw InputError(where + ": safetensors header is not a JSON object");
  const std::uint64_t data_size = file_size - 8 - n;
  *data_start = 8 + n;

  std::vector<TensorInfo> out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string w = where + ": tensor '" + it.key() + "'";
    const Json& e = it.value();
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets")) {
      throw InputError(w + ": entry needs dtype, shape and data_offsets");
    }
    TensorInfo t;
    t.name = it.key();
    if (!e["dtype"].is_string()) throw InputError(w + ": dtype must be a string");
    t.dtype_name = e["dtype"].get<std::string>();
    const std::size_t esize = element_size(t.dtype_name);
    if (esize == 0) throw InputError(w + ": unknown dtype '" + t.dtype_name + "'");
    t.dtype_supported = parse_dtype(t.dtype_name, &t.dtype);
    if (!e["shape"].is_array()) throw InputError(w + ": shape must be an array");
    std::uint64_t numel = 1;
    for (const Json& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<long long>() < 0) throw InputError(w + ": shape holds " + d.dump());
      const auto dim = static_cast<std::uint64_t>(d.get<long long>());
      if (dim != 0 && numel > (1ull << 62) / dim) throw InputError(w + ": shape is too large");
      numel *= dim;
      t.shape.push_back(static_cast<std::int64_t>(dim));
    }
    const Json& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      throw InputError(w + ": data_offsets must be two non-negative integers, got " + off.dump());
    }
    t.begin = off[0].get<std::uint64_t>();
    t.end = off[1].get<std::uint64_t>();
    if (t.end < t.begin) {
      throw InputError(w + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                       "] end before they begin");
    }
    if (t.end > data_size) {
      throw InputError(w + ": data_offsets end " + std::to_string(t.end) + " lies past the data section (" +
                       std::to_string(data_size) + " bytes): the file is truncated or the offsets are wrong");
    }
    // numel <= 2^62 but numel * esize may not fit: [2^31, 2^31] F32 would wrap to 0 bytes.
    if (numel > std::numeric_limits<std::uint64_t>::max() / esize) {
      throw InputError(w + ": shape " + e["shape"].dump() + " of " + t.dtype_name +
                       " needs more bytes than a 64-bit size holds: the header is corrupt");
    }
    if (t.end - t.begin != numel * esize) {
      throw InputError(w + ": shape and dtype need " + std::to_string(numel * esize) + " bytes but data_offsets hold " +
                       std::to_string(t.end - t.begin));
    }
    out.push_back(std::move(t));
  }
  std::vector<const TensorInfo*> sorted;
  for (const auto& t : out) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->begin < sorted[i - 1]->end) {
      throw InputError(where + ": tensors '" + sorted[i - 1]->name + "' and '" + sorted[i]->name +
                       "' have overlapping data ranges");
    }
  }
  return out;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  tensors_ = parse_safetensors_header(file_.data(), file_.size(), file_.size(), path, &data_start_);
  for (std::size_t i = 0; i < tensors_.size(); ++i) by_name_[tensors_[i].name] = i;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace plexus

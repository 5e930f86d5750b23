// GGUF bytes built by hand for tests: little-endian values and length-prefixed strings appended
// to a buffer (the tests write their files independently of core/gguf_writer).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace plexus {

struct GgufBytes {
  std::vector<std::uint8_t> b;
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    put<std::uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
  }
  void kv_u32(const std::string& k, std::uint32_t v) { str(k), put<std::uint32_t>(4), put<std::uint32_t>(v); }
  void kv_f32(const std::string& k, float v) { str(k), put<std::uint32_t>(6), put<float>(v); }
  void kv_str(const std::string& k, const std::string& v) { str(k), put<std::uint32_t>(8), str(v); }
};

}  // namespace plexus

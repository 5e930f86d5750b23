// libFuzzer target for the safetensors header parser: any byte string must either parse into
// consistent tensor entries or raise InputError — never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/error.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint64_t start = 0;
  try {
    const auto tensors = plexus::parse_safetensors_header(data, size, size, "fuzz.safetensors", &start);
    for (const auto& t : tensors) {
      // Every accepted range lies inside the input.
      if (start + t.end > size || t.begin > t.end) std::abort();
    }
  } catch (const plexus::InputError&) {
  }
  return 0;
}

// libFuzzer target for the GGUF reader: any byte string must either parse into a file whose
// tensors all lie inside the input, or raise InputError — never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "core/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const plexus::GgufFile f("fuzz.gguf", std::vector<std::uint8_t>(data, data + size));
    for (const auto& t : f.tensors()) {
      if (f.data_start() + t.offset + t.bytes > size) std::abort();
      if (t.numel() <= 0) std::abort();
    }
    (void)plexus::gguf_chat_template(f);
  } catch (const plexus::InputError&) {
  }
  return 0;
}

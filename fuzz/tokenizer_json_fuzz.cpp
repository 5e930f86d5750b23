// libFuzzer target for tokenizer.json: load it, then encode and decode a fixed text and the
// input's first bytes. InputError (a bad file, an untokenizable text) or success; nothing else.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = plexus::fuzz::text_of(data, size);
  try {
    const auto tok = plexus::Tokenizer::load(plexus::fuzz::scratch_file("tokenizer.json", text));
    for (const std::string& s : {std::string("Hello world, 123 héllo  \n\t<s> end"), text.substr(0, 256)}) {
      const auto ids = tok->encode(s, true);
      (void)tok->decode(ids);
    }
  } catch (const plexus::InputError&) {
  }
  return 0;
}

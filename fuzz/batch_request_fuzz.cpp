// libFuzzer target for `plexus batch` input files: every line checked as a request (vocabulary
// 300, context 2048); bad lines are collected, never thrown. Nothing may escape.
#include <cstddef>
#include <cstdint>

#include "batch/request.h"
#include "core/error.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  plexus::batch::ParseContext context;
  context.vocab_size = 300;
  context.max_context = 2048;
  try {
    (void)plexus::batch::read_requests(plexus::fuzz::scratch_file("in.jsonl", plexus::fuzz::text_of(data, size)), context);
  } catch (const plexus::RuntimeError&) {  // the file could not be read
  }
  return 0;
}

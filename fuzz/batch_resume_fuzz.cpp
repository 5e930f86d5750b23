// libFuzzer target for resuming a `plexus batch` output: open any file as the results journal.
// Either it is refused untouched (InputError) or it resumes: its lines are results and what is
// left on disk is the header or the complete lines it had.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "batch/coordinator.h"
#include "batch/journal.h"
#include "core/error.h"
#include "core/mmap_file.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = plexus::fuzz::text_of(data, size);
  const std::string path = plexus::fuzz::scratch_file("out.jsonl", text);
  try {
    plexus::batch::Journal j(path, plexus::batch::Journal::Mode::kResume, &plexus::batch::results_format());
    for (const plexus::Json& line : j.existing()) {
      if (!line.is_object() || line.contains("plexus_batch")) std::abort();  // only results come back
    }
    // What stays is a prefix of the input (a torn tail cut), followed by the header when the
    // file held no line before.
    const std::string after = plexus::read_text_file_or_empty(path);
    const std::string header = plexus::batch::results_format().header_line + "\n";
    const auto prefix_of_input = [&](std::size_t n) { return n <= text.size() && text.compare(0, n, after, 0, n) == 0; };
    const bool header_added = after.size() >= header.size() && after.compare(after.size() - header.size(), header.size(), header) == 0 &&
                              prefix_of_input(after.size() - header.size());
    if (!prefix_of_input(after.size()) && !header_added) std::abort();
  } catch (const plexus::InputError&) {
    if (plexus::read_text_file_or_empty(path) != text) std::abort();  // refused: nothing touched
  }
  return 0;
}

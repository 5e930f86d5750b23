// libFuzzer target for resuming a `plexus batch` output: open any file as the results journal.
// Either it is refused untouched (InputError) or it resumes: its lines are results and what is
// left on disk is a prefix of the file (a torn tail cut; plexus adds no line of its own).
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
    const plexus::batch::JournalFormat& format = plexus::batch::results_format();
    for (const plexus::Json& line : j.existing()) {
      if (!format.is_record(line) || line.contains(format.old_header_key)) std::abort();  // only results come back
    }
    const std::string after = plexus::read_text_file_or_empty(path);
    if (after.size() > text.size() || text.compare(0, after.size(), after) != 0) std::abort();
  } catch (const plexus::InputError&) {
    if (plexus::read_text_file_or_empty(path) != text) std::abort();  // refused: nothing touched
  }
  return 0;
}

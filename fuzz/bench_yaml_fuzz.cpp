// libFuzzer target for `plexus bench` configurations: load the YAML (overrides, sweep grid) into
// BenchConfigs. InputError or success; nothing else.
#include <cstddef>
#include <cstdint>

#include "bench/config_loader.h"
#include "core/error.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)plexus::bench::load_bench_config(plexus::fuzz::scratch_file("bench.yaml", plexus::fuzz::text_of(data, size)), {});
  } catch (const plexus::InputError&) {
  }
  return 0;
}

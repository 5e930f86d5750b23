// libFuzzer target for device maps (--device-map FILE): parse, then plan a small Llama with it
// on two devices and the CPU. InputError or success; nothing else.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "core/json.h"
#include "fuzz_util.h"
#include "planner/budgets.h"
#include "planner/device_map.h"
#include "planner/planner.h"

namespace {

const plexus::ModuleTree& tree() {
  static const plexus::ModuleTree t = plexus::ModuleTree::from_config(plexus::parse_model_config(
      plexus::Json{{"model_type", "llama"}, {"hidden_size", 64}, {"num_hidden_layers", 4}, {"num_attention_heads", 4},
                   {"num_key_value_heads", 2}, {"intermediate_size", 176}, {"vocab_size", 1000}},
      "fuzz config"));
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const plexus::DeviceMap map = plexus::load_device_map_file(plexus::fuzz::scratch_file("map.json", plexus::fuzz::text_of(data, size)));
    plexus::PlanRequest r;
    r.budgets = plexus::parse_max_memory("0=1GB,1=1GB,cpu=1GB");
    r.dtype = plexus::WeightDType::kF32;
    (void)plexus::plan_from_device_map(tree(), map, r);
  } catch (const plexus::InputError&) {
  }
  return 0;
}

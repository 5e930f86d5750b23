// libFuzzer target for config.json: parse, build the module tree and estimate the model (the
// checked arithmetic of sizes and counts). InputError or success; nothing else.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "core/json.h"
#include "fuzz_util.h"
#include "model/config.h"
#include "model/module_tree.h"
#include "planner/memory_estimate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const plexus::ModelConfig c = plexus::parse_model_config(plexus::parse_json(plexus::fuzz::text_of(data, size), "config.json"),
                                                             "config.json");
    if (c.num_layers > 64) return 0;  // bounded already; keeps each run fast
    const plexus::ModuleTree tree = plexus::ModuleTree::from_config(c);
    (void)plexus::estimate_model(tree);
  } catch (const plexus::InputError&) {
  }
  return 0;
}

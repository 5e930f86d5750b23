// Counted allocations with errors that say what was being placed.
#include "exec/device_memory.h"

#include <algorithm>

#include "core/error.h"
#include "core/units.h"

namespace plexus {

Buffer DeviceMemory::allocate(std::size_t bytes, const std::string& what) {
  Buffer b;
  try {
    b = device_->allocate(bytes);
  } catch (const RuntimeError& e) {
    throw RuntimeError("cannot place " + what + " (" + format_bytes(bytes) + ") on " + device_->name() +
                       ": the plan does not fit at run time. " + e.what() +
                       ". Plan with the same budgets the run has (--max-memory), or offload more to cpu/disk");
  }
  in_use_ += static_cast<std::int64_t>(bytes);
  peak_ = std::max(peak_, in_use_);
  return b;
}

}  // namespace plexus

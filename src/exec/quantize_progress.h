// The progress bar of quantise-on-load on stderr: a bar, percent, GB/s of source read and ETA,
// redrawn in place a few times a second, only on a terminal and for large models.
#pragma once
#include <cstdint>
#include <functional>

#include "model/checkpoint.h"

namespace plexus {

// Models smaller than this (elements quantised) load too fast to need a bar.
inline constexpr std::int64_t kQuantizeBarElems = std::int64_t{100} << 20;

// A Checkpoint::QuantizeProgress drawing the bar when stderr is a terminal and the work is at
// least kQuantizeBarElems; it stops the work (returns false) once `stop()` says so (e.g. a
// SIGINT the command caught).
Checkpoint::QuantizeProgress quantize_progress_bar(std::function<bool()> stop = {});

}  // namespace plexus

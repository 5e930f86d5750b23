// The process's resident memory from /proc/self/status (VmRSS, VmHWM) and the reset of its
// high-water mark (/proc/self/clear_refs): how a trial step measures what a micro-batch really uses.
#pragma once
#include <cstdint>

namespace plexus {

// Bytes resident now (VmRSS) and at the peak since the start or the last reset (VmHWM); -1 when
// /proc/self/status cannot be read (not Linux).
std::int64_t current_rss_bytes();
std::int64_t peak_rss_bytes();
// Sets the high-water mark to the current RSS (Linux ≥ 4.0); false when not permitted.
bool reset_peak_rss();

}  // namespace plexus

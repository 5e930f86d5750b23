// Column padding and byte counts for the planner's printed tables (plan_report, parallel_plan,
// plan_fit, planner).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/units.h"

namespace plexus::report_text {

// `s` padded with spaces on the right (left-aligned) or on the left (right-aligned) to `w`.
inline std::string pad(const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }
inline std::string rpad(const std::string& s, std::size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }
// "1.50 KiB", or "-" for nothing (zero or less).
inline std::string bytes(std::int64_t b) { return b > 0 ? format_bytes(static_cast<std::uint64_t>(b)) : "-"; }
// "1.50 KiB", with a negative count shown as "0 B".
inline std::string fb(std::int64_t b) { return format_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(0, b))); }

}  // namespace plexus::report_text

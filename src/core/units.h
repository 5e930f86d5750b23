// Memory sizes as people write them, following accelerate: GiB/MiB/KiB binary, GB/MB/KB
// decimal, plain integers are bytes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace plexus {

// "10GiB" -> 10737418240, "1.5GB" -> 1500000000, "123" -> 123. Throws InputError naming the text.
std::uint64_t parse_memory_size(std::string_view text);

// 1536 -> "1.50 KiB"; always binary units, for tables.
std::string format_bytes(std::uint64_t bytes);
// A size as a budget to paste into --max-memory or a config: no space, rounded up so that
// parse_memory_size(format_budget(n)) >= n, e.g. "225.38KiB", "1.53MiB", "512".
std::string format_budget(std::uint64_t bytes);

}  // namespace plexus

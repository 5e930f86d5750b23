// Text a driver library wrote into a fixed-size buffer: up to the first NUL or the buffer's end,
// never past it (a driver that fills the buffer without a terminating NUL must not overrun it).
#pragma once
#include <cstring>
#include <string>

namespace plexus {

inline std::string driver_string(const char* buffer, std::size_t size) { return std::string(buffer, ::strnlen(buffer, size)); }

}  // namespace plexus

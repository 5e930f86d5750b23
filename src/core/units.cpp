// Parsing and printing of memory sizes.
#include "core/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace plexus {

std::uint64_t parse_memory_size(std::string_view text) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  s = s.substr(start);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  const std::string number = s.substr(0, i);
  std::string unit = s.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  if (number.empty() || number == "." || number.find('.') != number.rfind('.')) {
    throw InputError("invalid memory size '" + std::string(text) +
                     "': expected a number with an optional unit, e.g. 10GiB, 500MB or 1073741824");
  }
  double multiplier = 0;
  std::string u;
  for (char c : unit) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (u.empty() || u == "B") multiplier = 1;
  else if (u == "KIB") multiplier = 1024.0;
  else if (u == "MIB") multiplier = 1024.0 * 1024;
  else if (u == "GIB") multiplier = 1024.0 * 1024 * 1024;
  else if (u == "TIB") multiplier = 1024.0 * 1024 * 1024 * 1024;
  else if (u == "KB") multiplier = 1e3;
  else if (u == "MB") multiplier = 1e6;
  else if (u == "GB") multiplier = 1e9;
  else if (u == "TB") multiplier = 1e12;
  else {
    throw InputError("invalid memory size '" + std::string(text) + "': unknown unit '" + unit +
                     "' (use KiB/MiB/GiB/TiB, KB/MB/GB/TB or plain bytes)");
  }
  const double value = std::stod(number) * multiplier;
  if (u.empty() || u == "B") {
    if (number.find('.') != std::string::npos) {
      throw InputError("invalid memory size '" + std::string(text) + "': plain bytes must be an integer");
    }
  }
  if (!(value < 1.8e19)) throw InputError("memory size '" + std::string(text) + "' is too large");
  // accelerate truncates fractional byte counts with int(); do the same.
  return static_cast<std::uint64_t>(std::floor(value));
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  return buf;
}

std::string format_budget(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double scale = 1;
  while (static_cast<double>(bytes) / scale >= 1024.0 && u < 4) {
    scale *= 1024.0;
    ++u;
  }
  if (u == 0) return std::to_string(bytes);
  // Rounded up to the hundredth, then up again while parsing it back would give less than asked.
  double v = std::ceil(static_cast<double>(bytes) / scale * 100.0) / 100.0;
  for (;;) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f%s", v, kUnits[u]);
    if (parse_memory_size(buf) >= bytes) return buf;
    v += 0.01;
  }
}

}  // namespace plexus

// VmRSS / VmHWM from /proc/self/status; "5" to /proc/self/clear_refs resets the peak.
#include "train/process_rss.h"

#include <cstdio>
#include <cstring>

namespace plexus {

namespace {

std::int64_t status_kib(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  std::int64_t kib = -1;
  const std::size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, field, n) == 0 && line[n] == ':') {
      long long v = 0;
      if (std::sscanf(line + n + 1, "%lld", &v) == 1) kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib;
}

}  // namespace

std::int64_t current_rss_bytes() {
  const std::int64_t k = status_kib("VmRSS");
  return k < 0 ? -1 : k * 1024;
}

std::int64_t peak_rss_bytes() {
  const std::int64_t k = status_kib("VmHWM");
  return k < 0 ? -1 : k * 1024;
}

bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace plexus

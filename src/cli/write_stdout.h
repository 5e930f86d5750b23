// Text to standard output that fails loudly: a full disk or a closed pipe must not pass as a
// command that succeeded.
#pragma once
#include <cstdio>
#include <string>

#include "core/error.h"

namespace plexus::cli {

inline void write_stdout(const std::string& s) {
  if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size()) throw RuntimeError("writing to stdout failed");
}

}  // namespace plexus::cli

// The terminal progress line of long file-writing commands.
#include "cli/progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace plexus::cli {

ProgressLine::ProgressLine() : tty_(::isatty(STDERR_FILENO) != 0) {}

void ProgressLine::show(const std::string& text) {
  if (!tty_) return;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace plexus::cli

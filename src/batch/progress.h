// The progress bar of `plexus batch` on stderr: done/total, tokens/s, ETA; redrawn in place at
// most a few times a second, and only when stderr is a terminal (else silent).
#pragma once
#include <cstdint>
#include <cstdio>

#include "core/timer.h"

namespace plexus::batch {

class Progress {
 public:
  // `enabled` false: every call does nothing (use isatty(stderr) to decide).
  Progress(bool enabled, std::int64_t total, std::FILE* out = stderr);
  void update(std::int64_t done, std::int64_t failed, std::int64_t tokens);
  void finish();  // ends the bar's line

 private:
  void draw(std::int64_t done, std::int64_t failed, std::int64_t tokens);

  bool enabled_;
  std::int64_t total_;
  std::FILE* out_;
  Timer timer_;
  double last_draw_s_ = -1;
  bool drawn_ = false;
};

}  // namespace plexus::batch

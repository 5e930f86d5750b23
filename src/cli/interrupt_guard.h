// SIGINT / SIGTERM as a request to stop: while an InterruptGuard lives, either signal sets a flag
// the command polls (between samples, batches, tensors) instead of killing the process, so it
// can keep what is complete and exit 130.
#pragma once
#include <signal.h>

namespace plexus::cli {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers and clears the flag
  ~InterruptGuard();  // restores the previous handlers
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // A signal arrived since construction.
  static bool requested();
  // Which one: SIGINT or SIGTERM (0 when none).
  static int signal_number();
  // How many arrived since construction (a second one can mean "now").
  static int count();

 private:
  struct sigaction old_int_ = {}, old_term_ = {};
};

}  // namespace plexus::cli

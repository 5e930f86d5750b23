// The signal flag (a handler can reach nothing else) and installing / restoring the handlers.
#include "cli/interrupt_guard.h"

namespace plexus::cli {

namespace {
volatile sig_atomic_t g_signal = 0;
volatile sig_atomic_t g_count = 0;
void on_signal(int sig) {
  g_signal = sig;
  g_count = g_count + 1;
}
}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal = 0;
  g_count = 0;
  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

bool InterruptGuard::requested() { return g_signal != 0; }

int InterruptGuard::signal_number() { return g_signal; }

int InterruptGuard::count() { return g_count; }

}  // namespace plexus::cli

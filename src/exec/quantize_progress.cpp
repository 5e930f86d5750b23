// Quantise-on-load progress on a terminal.
#include "exec/quantize_progress.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "core/timer.h"

namespace plexus {

Checkpoint::QuantizeProgress quantize_progress_bar(std::function<bool()> stop) {
  struct State {
    Timer timer;
    double last_draw_s = -1;
    bool drawn = false;
  };
  auto state = std::make_shared<State>();
  const bool tty = isatty(STDERR_FILENO) != 0;
  return [state, tty, stop = std::move(stop)](std::int64_t done, std::int64_t total) {
    if (tty && total >= kQuantizeBarElems) {
      const double now = state->timer.seconds();
      if (done == total || state->last_draw_s < 0 || now - state->last_draw_s >= 0.2) {
        state->last_draw_s = now;
        constexpr int kWidth = 30;
        const int filled = static_cast<int>(kWidth * done / total);
        std::string eta = "--:--";
        if (done > 0) {
          const long long left = static_cast<long long>(now / static_cast<double>(done) * static_cast<double>(total - done));
          char buf[32];
          std::snprintf(buf, sizeof buf, "%lld:%02lld", left / 60, left % 60);
          eta = buf;
        }
        std::fprintf(stderr, "\rquantising [%s%s] %3d%%  %.0f M weights/s  ETA %s \x1b[K",
                     std::string(static_cast<std::size_t>(filled), '#').c_str(),
                     std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(),
                     static_cast<int>(100 * done / total), now > 0 ? static_cast<double>(done) / now / 1e6 : 0.0,
                     eta.c_str());
        if (done == total) std::fputc('\n', stderr);
        std::fflush(stderr);
        state->drawn = true;
      }
    }
    return !(stop && stop());
  };
}

}  // namespace plexus

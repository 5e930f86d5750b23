// Terminal progress bar.
#include "batch/progress.h"

#include <string>

namespace plexus::batch {

Progress::Progress(bool enabled, std::int64_t total, std::FILE* out) : enabled_(enabled && total > 0), total_(total), out_(out) {}

void Progress::update(std::int64_t done, std::int64_t failed, std::int64_t tokens) {
  if (!enabled_) return;
  const double now = timer_.seconds();
  if (last_draw_s_ >= 0 && now - last_draw_s_ < 0.2 && done + failed < total_) return;
  last_draw_s_ = now;
  draw(done, failed, tokens);
}

void Progress::draw(std::int64_t done, std::int64_t failed, std::int64_t tokens) {
  constexpr int kWidth = 30;
  const std::int64_t finished = done + failed;
  const int filled = static_cast<int>(kWidth * finished / total_);
  const double s = timer_.seconds();
  const double rate = s > 0 ? static_cast<double>(tokens) / s : 0;
  std::string eta = "--:--";
  if (finished > 0 && finished < total_) {
    const long long left = static_cast<long long>(s / static_cast<double>(finished) * static_cast<double>(total_ - finished));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld:%02lld", left / 60, left % 60);
    eta = buf;
  } else if (finished >= total_) {
    eta = "0:00";
  }
  std::fprintf(out_, "\r[%s%s] %lld/%lld%s  %.1f tok/s  ETA %s \x1b[K", std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(), static_cast<long long>(finished),
               static_cast<long long>(total_), failed > 0 ? (" (" + std::to_string(failed) + " failed)").c_str() : "", rate,
               eta.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void Progress::finish() {
  if (enabled_ && drawn_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
}

}  // namespace plexus::batch

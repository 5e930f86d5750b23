// Run statistics as JSON and text.
#include "exec/exec_stats.h"

#include <cstdio>

#include "core/units.h"

namespace plexus {

double ExecStats::busy_sum() const {
  double s = 0;
  for (const DeviceRunStats& d : devices) s += d.busy_fraction;
  return s;
}

ExecStats exec_stats_since(const ExecStats& now, const ExecStats& before) {
  ExecStats d = now;
  d.wall_s = now.wall_s - before.wall_s;
  d.forwards = now.forwards - before.forwards;
  d.streamed_bytes = now.streamed_bytes - before.streamed_bytes;
  d.stream_copy_s = now.stream_copy_s - before.stream_copy_s;
  d.stream_wait_s = now.stream_wait_s - before.stream_wait_s;
  d.tokens = now.tokens - before.tokens;
  for (auto [a, b] : {std::pair{&d.comm.all_reduce, &before.comm.all_reduce}, {&d.comm.all_gather, &before.comm.all_gather},
                      {&d.comm.broadcast, &before.comm.broadcast}}) {
    a->calls -= b->calls;
    a->bytes -= b->bytes;
    a->seconds -= b->seconds;
  }
  for (DeviceRunStats& dev : d.devices) {
    for (const DeviceRunStats& b : before.devices) {
      if (b.ordinal == dev.ordinal && b.name == dev.name) dev.busy_s -= b.busy_s;
    }
    dev.busy_fraction = d.wall_s > 0 ? dev.busy_s / d.wall_s : 0;
  }
  return d;
}

double comm_bytes_per_token(const ExecStats& s) {
  return s.comm_ranks > 0 && s.tokens > 0 ? static_cast<double>(s.comm.bytes()) / s.comm_ranks / static_cast<double>(s.tokens) : 0;
}

double comm_seconds_per_token(const ExecStats& s) {
  return s.comm_ranks > 0 && s.tokens > 0 ? s.comm.seconds() / s.comm_ranks / static_cast<double>(s.tokens) : 0;
}

double comm_share(const ExecStats& s) {
  return s.comm_ranks > 0 && s.wall_s > 0 ? s.comm.seconds() / s.comm_ranks / s.wall_s : 0;
}

Json exec_stats_to_json(const ExecStats& s) {
  Json devices = Json::array();
  for (const DeviceRunStats& d : s.devices) {
    devices.push_back({{"device", d.ordinal < 0 ? Json("cpu") : Json(d.ordinal)},
                       {"name", d.name},
                       {"budget_bytes", d.budget_bytes},
                       {"peak_bytes", d.peak_bytes},
                       {"busy_s", d.busy_s},
                       {"busy_fraction", d.busy_fraction},
                       {"holds", d.holds}});
  }
  return {{"devices", devices},
          {"stages", s.stages},
          {"micro_batches", s.micro_batches},
          {"forward_wall_s", s.wall_s},
          {"busy_fraction_sum", s.busy_sum()},
          {"streamed_bytes", s.streamed_bytes},
          {"stream_copy_s", s.stream_copy_s},
          {"stream_wait_s", s.stream_wait_s},
          {"tokens", s.tokens},
          {"communication", s.comm_ranks == 0 ? Json(nullptr)
                                              : Json{{"ranks", s.comm_ranks},
                                                     {"collectives", comm_stats_to_json(s.comm)},
                                                     {"bytes_per_token", comm_bytes_per_token(s)},
                                                     {"seconds_per_token", comm_seconds_per_token(s)},
                                                     {"share_of_forward_time", comm_share(s)}}}};
}

std::string exec_stats_to_text(const ExecStats& s) {
  std::string out;
  char line[256];
  for (const DeviceRunStats& d : s.devices) {
    std::snprintf(line, sizeof line, "  %-10s busy %5.1f%%  peak %s of %s  %s\n", d.name.c_str(), 100 * d.busy_fraction,
                  format_bytes(static_cast<std::uint64_t>(d.peak_bytes)).c_str(), format_bytes(d.budget_bytes).c_str(),
                  d.holds.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "  %d stage(s), %d micro-batch(es); busy fractions sum to %.2f over %.3f s of forward passes\n",
                s.stages, s.micro_batches, s.busy_sum(), s.wall_s);
  out += line;
  if (s.streamed_bytes > 0) {
    std::snprintf(line, sizeof line, "  streamed %s of offloaded weights: %.3f s copying, compute waited %.3f s\n",
                  format_bytes(static_cast<std::uint64_t>(s.streamed_bytes)).c_str(), s.stream_copy_s, s.stream_wait_s);
    out += line;
  }
  if (s.comm_ranks > 0) {
    std::snprintf(line, sizeof line,
                  "  collectives of %d tensor-parallel devices: %lld all-reduce + %lld all-gather; per token and device %s in "
                  "%.3f ms (%.1f%% of the forward time)\n",
                  s.comm_ranks, static_cast<long long>(s.comm.all_reduce.calls), static_cast<long long>(s.comm.all_gather.calls),
                  format_bytes(static_cast<std::uint64_t>(comm_bytes_per_token(s))).c_str(), 1e3 * comm_seconds_per_token(s),
                  100 * comm_share(s));
    out += line;
  }
  return out;
}

}  // namespace plexus

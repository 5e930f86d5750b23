// What a multi-device run measured: per device busy time and fraction, memory peak and what it
// holds; weight streaming bytes, copy time and the time compute waited for it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "core/json.h"

namespace plexus {

struct DeviceRunStats {
  std::string name;             // "virtual:0", "cpu"
  int ordinal = -1;             // -1: the host
  std::uint64_t budget_bytes = 0;
  std::int64_t peak_bytes = 0;  // most allocated at once by this run
  std::int64_t in_use_bytes = 0;
  double busy_s = 0;            // time its queue ran compute
  double busy_fraction = 0;     // busy_s / wall time of the forward passes
  std::string holds;            // "embedding, layers 0-3, head"
};

struct ExecStats {
  std::vector<DeviceRunStats> devices;
  double wall_s = 0;              // summed wall time of the forward passes
  std::int64_t forwards = 0;
  int stages = 0, micro_batches = 0;
  std::int64_t streamed_bytes = 0;
  double stream_copy_s = 0;       // copy-thread time spent copying offloaded weights
  double stream_wait_s = 0;       // compute time spent waiting for them
  std::int64_t tokens = 0;        // tokens forwarded (once, however many ranks computed them)
  // Tensor parallelism: the collectives of every rank's devices, summed, and how many devices
  // took part (a rank's device per pipeline stage; 0: none). Per token and device:
  // comm.seconds() / comm_ranks / tokens.
  CommStats comm;
  int comm_ranks = 0;
  double busy_sum() const;        // summed busy fractions: > 1 means devices overlapped
};

// What happened between two snapshots of one run (e.g. excluding a warm-up): times, forwards and
// streaming are differences, busy fractions are recomputed over the difference of wall time;
// peaks, budgets and layout are `now`'s.
ExecStats exec_stats_since(const ExecStats& now, const ExecStats& before);

Json exec_stats_to_json(const ExecStats& s);
// Tensor parallelism: bytes one rank moves per token, its seconds in collectives per token and
// their share of the forward time (0 without collectives).
double comm_bytes_per_token(const ExecStats& s);
double comm_seconds_per_token(const ExecStats& s);
double comm_share(const ExecStats& s);

// A few lines for stderr / --verbose.
std::string exec_stats_to_text(const ExecStats& s);

}  // namespace plexus

// Forward on every local rank at once, then the logits' vocabulary slices put side by side.
#include "exec/tensor_parallel_runner.h"

#include <algorithm>
#include <cassert>
#include <exception>

#include "core/error.h"
#include "model/tensor_split.h"

namespace plexus {

TensorParallelRunner::TensorParallelRunner(Parts parts) : parts_(std::move(parts)) {
  assert(!parts_.ranks.empty());
  assert(parts_.world ? parts_.ranks.size() == 1 : static_cast<int>(parts_.ranks.size()) == parts_.tp);
  vocab_ = parts_.ranks.front()->config().vocab_size;
  rank_logits_.resize(parts_.ranks.size());
}

TensorParallelRunner::~TensorParallelRunner() {
  parts_.ranks.clear();  // before the devices and collectives they use
}

int TensorParallelRunner::open_sequence(std::int64_t capacity) {
  const int slot = parts_.ranks.front()->open_sequence(capacity);
  for (std::size_t r = 1; r < parts_.ranks.size(); ++r) {
    const int other = parts_.ranks[r]->open_sequence(capacity);
    if (other != slot) throw RuntimeError("internal: tensor-parallel ranks gave a sequence different slots");
  }
  return slot;
}

void TensorParallelRunner::close_sequence(int slot) {
  for (auto& e : parts_.ranks) e->close_sequence(slot);
}

void TensorParallelRunner::copy_sequence(int from, int to, std::int64_t tokens) {
  for (auto& e : parts_.ranks) e->copy_sequence(from, to, tokens);
}

void TensorParallelRunner::forward(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  if (!parts_.world) return forward_ranks(batch, rows, logits);
  try {
    if (parts_.inject_forward_failure) {
      parts_.inject_forward_failure = false;
      throw RuntimeError("injected failure at its first forward (PLEXUS_TP_FAIL_RANK=" + std::to_string(rank()) + ")");
    }
    forward_ranks(batch, rows, logits);
  } catch (const std::exception& e) {
    // The other processes wait for this one in a collective: end them all.
    parts_.world->abort("tensor-parallel rank " + std::to_string(rank()) + " of " + std::to_string(parts_.tp) + " failed: " + e.what());
    throw;  // a collective whose abort returns
  }
}

void TensorParallelRunner::forward_ranks(const SlotBatch& batch, std::span<const std::int64_t> rows, float* logits) {
  if (batch.ids.empty()) return;
  const std::int64_t m = static_cast<std::int64_t>(rows.size());
  const int tp = parts_.tp;
  for (std::size_t r = 0; r < parts_.ranks.size(); ++r) {
    rank_logits_[r].resize(static_cast<std::size_t>(m * parts_.ranks[r]->vocab_size()));
  }
  // Every local rank starts before any is waited for: they meet in their collectives.
  std::exception_ptr first;
  std::size_t started = 0;
  for (; started < parts_.ranks.size() && !first; ++started) {
    try {
      parts_.ranks[started]->forward_start(batch, rows, rank_logits_[started].data());
    } catch (...) {
      first = std::current_exception();
      for (auto& g : parts_.groups) g->abort("tensor-parallel rank " + std::to_string(started) + " could not start");
    }
  }
  for (std::size_t r = 0; r < started; ++r) {
    try {
      parts_.ranks[r]->forward_wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  // Rank r's logits are columns [first, first + count) of each row.
  auto place = [&](int r, const float* src, std::int64_t ld) {
    const VocabRows vr = shard_vocab_rows(vocab_, TensorSplit{r, tp});
    for (std::int64_t i = 0; i < m; ++i) std::copy_n(src + i * ld, vr.count, logits + i * vocab_ + vr.first);
  };
  if (!parts_.world) {
    for (int r = 0; r < tp; ++r) place(r, rank_logits_[static_cast<std::size_t>(r)].data(), parts_.ranks[static_cast<std::size_t>(r)]->vocab_size());
    return;
  }
  // Across processes: every rank sends its slice padded to the common width.
  const std::int64_t width = shard_vocab_width(vocab_, tp), own = parts_.ranks.front()->vocab_size();
  send_.assign(static_cast<std::size_t>(m * width), 0.0f);
  for (std::int64_t i = 0; i < m; ++i) std::copy_n(rank_logits_[0].data() + i * own, own, send_.data() + i * width);
  gathered_.resize(static_cast<std::size_t>(tp * m * width));
  parts_.world->all_gather(send_.data(), m * width, gathered_.data());
  for (int r = 0; r < tp; ++r) place(r, gathered_.data() + static_cast<std::int64_t>(r) * m * width, width);
}

ExecStats TensorParallelRunner::stats() const {
  ExecStats out;
  const std::size_t n = parts_.ranks.size();
  std::vector<ExecStats> per(n);
  for (std::size_t r = 0; r < n; ++r) per[r] = parts_.ranks[r]->stats();
  out = per.front();
  out.devices.clear();
  out.comm = CommStats();
  out.comm_ranks = 0;
  for (const ExecStats& s : per) out.wall_s = std::max(out.wall_s, s.wall_s);
  // Accelerator d of local rank r is the run's device d · tp + r (tensor-parallel rank fastest).
  for (std::size_t r = 0; r < n; ++r) {
    const int global_rank = parts_.world ? parts_.world->rank() : static_cast<int>(r);
    for (DeviceRunStats d : per[r].devices) {
      if (d.ordinal < 0 && r > 0) continue;  // one host line
      if (d.ordinal >= 0) {  // "virtual:1" of rank 2 of 3 is the run's "virtual:5"
        d.ordinal = d.ordinal * parts_.tp + global_rank;
        d.name = d.name.substr(0, d.name.rfind(':') + 1) + std::to_string(d.ordinal);
        d.holds += (d.holds.empty() ? "" : " ") + std::string("(tp rank ") + std::to_string(global_rank) + ")";
      }
      d.busy_fraction = out.wall_s > 0 ? d.busy_s / out.wall_s : 0;
      out.devices.push_back(d);
    }
    out.comm += per[r].comm;
    out.comm_ranks += per[r].comm_ranks;
  }
  std::stable_sort(out.devices.begin(), out.devices.end(), [](const DeviceRunStats& a, const DeviceRunStats& b) {
    return (a.ordinal < 0 ? 1 << 30 : a.ordinal) < (b.ordinal < 0 ? 1 << 30 : b.ordinal);
  });
  return out;
}

}  // namespace plexus

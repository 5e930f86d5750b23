// CUDA graphs of repeated batches: a decode step issues the same launches with the same
// arguments step after step (everything that changes lives in fixed device buffers written
// before the step), so it is captured once and replayed. Plain C++ header.
//
// Per key (tokens, context bucket) the first eligible batch runs eagerly and records the
// signature of its operations (op kind and every argument); the second is captured into a graph
// (while running it); later batches defer their operations, compare each one's signature with the
// graph's and, when all match, launch the graph at end() instead. A mismatch, or an operation
// that cannot be captured (host data uploaded mid-batch), runs the deferred operations eagerly
// in order and goes on eagerly; the key is then recorded again (mismatch; after a second one it
// is never graphed: batches alternating buffers under one key) or never graphed (uncapturable). Work that others enqueue on the stream between begin() and end() would run
// before deferred operations: callers that do so must not enable graphs.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace plexus::cuda {

class StepGraphs {
 public:
  using Launch = std::function<void()>;

  StepGraphs(cudaStream_t stream, std::string device_name) : stream_(stream), device_(std::move(device_name)) {}
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Starts a batch of key (tokens, bucket); `eligible`: it may be captured at all.
  void begin(std::int64_t tokens, std::int64_t bucket, bool eligible);
  // One operation: its signature and its launch (which checks its own errors). Runs it now,
  // runs it under capture, or defers it to end().
  void op(std::span<const std::uint64_t> signature, const Launch& launch);
  // The next operation cannot be captured or replayed: the rest of the batch runs eagerly.
  void uncapturable();
  // Ends the batch: launches the replayed or just-captured graph (or nothing).
  void end();
  // Ends an unfinished capture and forgets deferred operations (after an exception).
  void reset() noexcept;

  std::int64_t graph_count() const;             // instantiated graphs
  std::int64_t replays() const { return replays_; }  // batches run as a replayed graph

 private:
  enum class Mode { kEager, kRecord, kCapture, kReplay };
  struct Entry {
    std::vector<std::uint64_t> signature;  // the recorded or captured batch's operations
    cudaGraphExec_t exec = nullptr;
    bool never = false;                    // an uncapturable batch had this key, or too many mismatches
    int mismatches = 0;                    // replays that found a different batch (micro-batches
                                           // alternating buffers): after kMaxMismatches, never
  };
  static constexpr int kMaxMismatches = 2;
  void run_pending();      // the deferred/captured operations, eagerly, in order
  void abandon_capture();  // ends a capture, discarding its graph
  void drop_graph(Entry& e);

  cudaStream_t stream_;
  std::string device_;
  std::map<std::pair<std::int64_t, std::int64_t>, Entry> entries_;
  Entry* current_ = nullptr;
  Mode mode_ = Mode::kEager;
  std::vector<std::uint64_t> signature_;  // this batch's, recording or capturing
  std::size_t matched_ = 0;               // words of current_->signature matched (replay)
  std::vector<Launch> pending_;           // this batch's operations (capture, replay)
  std::int64_t replays_ = 0;
};

}  // namespace plexus::cuda

// Capture and replay of repeated batches as CUDA graphs (see step_graphs.h).
#include "compute/cuda/step_graphs.h"

#include <algorithm>

#include "kernels/cuda/cuda_check.h"

namespace plexus::cuda {

StepGraphs::~StepGraphs() {
  reset();
  for (auto& [key, e] : entries_) drop_graph(e);
}

void StepGraphs::drop_graph(Entry& e) {
  if (e.exec) cudaGraphExecDestroy(e.exec);
  e.exec = nullptr;
}

void StepGraphs::abandon_capture() {
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(stream_, &g);  // ends the capture even when it was invalidated
  if (g) cudaGraphDestroy(g);
  cudaGetLastError();  // a capture error is not the next operation's
}

void StepGraphs::reset() noexcept {
  if (mode_ == Mode::kCapture) abandon_capture();
  pending_.clear();
  signature_.clear();
  mode_ = Mode::kEager;
  current_ = nullptr;
}

void StepGraphs::run_pending() {
  std::vector<Launch> ops;
  ops.swap(pending_);
  for (const Launch& l : ops) l();
}

void StepGraphs::begin(std::int64_t tokens, std::int64_t bucket, bool eligible) {
  reset();
  if (!eligible) return;
  Entry& e = entries_[{tokens, bucket}];
  if (e.never) return;
  current_ = &e;
  if (e.exec) {
    mode_ = Mode::kReplay;
    matched_ = 0;
  } else if (!e.signature.empty()) {
    // Seen once eagerly (its kernels are loaded): capture this one.
    const cudaError_t s = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed);
    if (s != cudaSuccess) {
      cudaGetLastError();
      e.never = true;
      current_ = nullptr;
      return;
    }
    mode_ = Mode::kCapture;
  } else {
    mode_ = Mode::kRecord;
  }
}

void StepGraphs::op(std::span<const std::uint64_t> signature, const Launch& launch) {
  switch (mode_) {
    case Mode::kEager:
      launch();
      return;
    case Mode::kRecord:
      signature_.push_back(signature.size());
      signature_.insert(signature_.end(), signature.begin(), signature.end());
      launch();
      return;
    case Mode::kCapture:
      signature_.push_back(signature.size());
      signature_.insert(signature_.end(), signature.begin(), signature.end());
      pending_.push_back(launch);
      try {
        launch();
      } catch (...) {
        // The launch failed under capture: give up capturing this key and run the batch so far
        // eagerly (a real error shows again there).
        abandon_capture();
        current_->never = true;
        mode_ = Mode::kEager;
        run_pending();
      }
      return;
    case Mode::kReplay: {
      const std::vector<std::uint64_t>& want = current_->signature;
      const std::size_t len = signature.size();
      const bool same = matched_ + 1 + len <= want.size() && want[matched_] == len &&
                        std::equal(signature.begin(), signature.end(), want.begin() + static_cast<std::ptrdiff_t>(matched_ + 1));
      if (same) {
        matched_ += 1 + len;
        pending_.push_back(launch);
        return;
      }
      // This batch differs from the graph: run what was deferred, then go on eagerly; the key
      // is recorded afresh next time.
      drop_graph(*current_);
      current_->signature.clear();
      current_->never = ++current_->mismatches >= kMaxMismatches;
      mode_ = Mode::kEager;
      run_pending();
      launch();
      return;
    }
  }
}

void StepGraphs::uncapturable() {
  switch (mode_) {
    case Mode::kEager: return;
    case Mode::kRecord: break;
    case Mode::kCapture:
      abandon_capture();
      mode_ = Mode::kEager;
      run_pending();
      break;
    case Mode::kReplay:
      mode_ = Mode::kEager;
      run_pending();
      drop_graph(*current_);
      break;
  }
  current_->never = true;
  mode_ = Mode::kEager;
  signature_.clear();
}

void StepGraphs::end() {
  const Mode mode = mode_;
  mode_ = Mode::kEager;
  switch (mode) {
    case Mode::kEager: break;
    case Mode::kRecord:
      current_->signature = signature_;
      break;
    case Mode::kCapture: {
      cudaGraph_t g = nullptr;
      cudaGraphExec_t exec = nullptr;
      cudaError_t s = cudaStreamEndCapture(stream_, &g);
      if (s == cudaSuccess) s = cudaGraphInstantiate(&exec, g, 0);
      if (g) cudaGraphDestroy(g);
      if (s != cudaSuccess) {  // not capturable after all: run the batch eagerly
        cudaGetLastError();
        current_->never = true;
        run_pending();
        break;
      }
      current_->exec = exec;
      current_->signature = signature_;
      PLEXUS_CUDA_CHECK(cudaGraphLaunch(exec, stream_), device_ + " launching a captured step");
      break;
    }
    case Mode::kReplay:
      if (matched_ == current_->signature.size()) {
        PLEXUS_CUDA_CHECK(cudaGraphLaunch(current_->exec, stream_), device_ + " replaying a captured step");
        ++replays_;
      } else {  // fewer operations than the graph: run them eagerly, record the key afresh
        drop_graph(*current_);
        current_->signature.clear();
        current_->never = ++current_->mismatches >= kMaxMismatches;
        run_pending();
      }
      break;
  }
  pending_.clear();
  signature_.clear();
  current_ = nullptr;
}

std::int64_t StepGraphs::graph_count() const {
  std::int64_t n = 0;
  for (const auto& [key, e] : entries_) n += e.exec != nullptr;
  return n;
}

}  // namespace plexus::cuda

// The CUDA in-process collectives: wait for the stream, post, meet, reduce / copy, meet.
#include "comm/cuda/cuda_in_process_group.h"

#include <cassert>
#include <exception>

#include "comm/cuda/sum_ranks.h"
#include "core/error.h"
#include "core/timer.h"
#include "core/units.h"
#include "kernels/cuda/cuda_check.h"

namespace plexus::cuda {

class CudaInProcessGroup::Rank : public Collective {
 public:
  Rank(CudaInProcessGroup& g, int r) : g_(g), r_(r), place_(g.places_[static_cast<std::size_t>(r)]) {}
  ~Rank() override {
    if (scratch_ == nullptr) return;
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (previous != place_.gpu) cudaSetDevice(place_.gpu);
    cudaFree(scratch_);
    if (previous >= 0 && previous != place_.gpu) cudaSetDevice(previous);
    cudaGetLastError();
  }
  int rank() const override { return r_; }
  int size() const override { return g_.size(); }
  std::string kind() const override { return "cuda in-process"; }

  void all_reduce_sum(float* data, std::int64_t count) override {
    guarded("all-reduce of " + std::to_string(count) + " floats", [&] {
      Timer t;
      GpuScope gpu(place_.gpu, who() + ": selecting the GPU for an all-reduce");
      const int n = g_.size();
      const std::int64_t lo = chunk_lo(count, r_), hi = chunk_lo(count, r_ + 1);
      sync("waiting for the partial product before an all-reduce");
      // The previous collective ended after every rank's copies out of this scratch: free to grow.
      ensure_scratch(hi - lo);
      g_.barrier_.locked([&] {
        g_.posted_[static_cast<std::size_t>(r_)] = data;
        g_.chunks_[static_cast<std::size_t>(r_)] = scratch_;
      });
      {
        RankBarrier::Reading reading(g_.barrier_);
        reading.arrive();  // every rank's partial product is complete and posted
        const float* ins[kMaxSumRanks];
        for (int k = 0; k < n; ++k) ins[k] = static_cast<const float*>(g_.posted_[static_cast<std::size_t>(k)]) + lo;
        launch_sum_ranks(ins, n, hi - lo, scratch_, place_.stream);
        check(cudaGetLastError(), "launch_sum_ranks", "summing this rank's chunk");
        sync("summing this rank's chunk");
      }
      {
        RankBarrier::Reading reading(g_.barrier_);
        reading.arrive();  // every chunk summed: nobody reads the posted buffers any more
        for (int k = 0; k < n; ++k) {
          const std::int64_t klo = chunk_lo(count, k), khi = chunk_lo(count, k + 1);
          if (khi > klo) {
            check(cudaMemcpyAsync(data + klo, g_.chunks_[static_cast<std::size_t>(k)], static_cast<std::size_t>(khi - klo) * sizeof(float),
                                  cudaMemcpyDefault, place_.stream),
                  "cudaMemcpyAsync", "copying rank " + std::to_string(k) + "'s chunk of the sum");
          }
        }
        sync("copying the sum back");
      }
      g_.barrier_.arrive();  // every rank has its copy: the scratch is free again
      count_op(stats_.all_reduce, count * static_cast<std::int64_t>(sizeof(float)), t);
    });
  }

  void all_gather(const float* in, std::int64_t count, float* out) override {
    guarded("all-gather of " + std::to_string(count) + " floats", [&] {
      Timer t;
      GpuScope gpu(place_.gpu, who() + ": selecting the GPU for an all-gather");
      sync("waiting for the input of an all-gather");
      const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
      {
        RankBarrier::Reading reading(g_.barrier_);
        post(reading, in);
        for (int k = 0; k < g_.size(); ++k) {
          if (bytes > 0) {
            check(cudaMemcpyAsync(out + k * count, g_.posted_[static_cast<std::size_t>(k)], bytes, cudaMemcpyDefault, place_.stream),
                  "cudaMemcpyAsync", "copying rank " + std::to_string(k) + "'s part");
          }
        }
        sync("gathering");
      }
      g_.barrier_.arrive();  // every rank has read every input
      count_op(stats_.all_gather, static_cast<std::int64_t>(bytes), t);
    });
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    assert(root >= 0 && root < g_.size());
    guarded("broadcast of " + format_bytes(bytes), [&] {
      Timer t;
      GpuScope gpu(place_.gpu, who() + ": selecting the GPU for a broadcast");
      sync("waiting for the data of a broadcast");
      {
        RankBarrier::Reading reading(g_.barrier_);
        post(reading, data);
        if (r_ != root && bytes > 0) {
          check(cudaMemcpyAsync(data, g_.posted_[static_cast<std::size_t>(root)], bytes, cudaMemcpyDefault, place_.stream),
                "cudaMemcpyAsync", "copying rank " + std::to_string(root) + "'s data");
        }
        sync("receiving a broadcast");
      }
      g_.barrier_.arrive();  // every rank has its copy
      count_op(stats_.broadcast, static_cast<std::int64_t>(bytes), t);
    });
  }

  void barrier() override { g_.barrier_.arrive(); }
  void abort(const std::string& why) override { g_.abort(why); }

 private:
  std::string who() const { return place_.name.empty() ? "rank " + std::to_string(r_) + " (GPU " + std::to_string(place_.gpu) + ")" : place_.name; }
  void check(cudaError_t status, const char* call, const std::string& what) const { cuda::check(status, call, who() + ": " + what); }
  void sync(const std::string& what) const { check(cudaStreamSynchronize(place_.stream), "cudaStreamSynchronize", what); }
  std::int64_t chunk_lo(std::int64_t count, int k) const { return count * k / g_.size(); }

  void ensure_scratch(std::int64_t floats) {
    if (floats <= capacity_) return;
    if (scratch_ != nullptr) {
      check(cudaFree(scratch_), "cudaFree", "freeing the all-reduce scratch");
      scratch_ = nullptr;
      capacity_ = 0;
    }
    void* p = nullptr;
    check(cudaMalloc(&p, static_cast<std::size_t>(floats) * sizeof(float)), "cudaMalloc",
          "allocating " + format_bytes(static_cast<std::uint64_t>(floats) * sizeof(float)) + " of all-reduce scratch");
    scratch_ = static_cast<float*>(p);
    capacity_ = floats;
  }

  // Posts this rank's buffer and waits for every rank's: they read each other's until `reading` ends.
  void post(RankBarrier::Reading& reading, const void* buffer) {
    g_.barrier_.locked([&] { g_.posted_[static_cast<std::size_t>(r_)] = buffer; });
    reading.arrive();
  }

  // A rank that fails inside a collective releases the others (they would wait for it forever).
  template <class F>
  void guarded(const std::string& op, F body) {
    try {
      body();
    } catch (const std::exception& e) {
      g_.abort("tensor-parallel rank " + std::to_string(r_) + " failed in a CUDA " + op + ": " + e.what());
      throw;
    }
  }

  static void count_op(CommStats::Op& op, std::int64_t bytes, const Timer& t) {
    ++op.calls;
    op.bytes += bytes;
    op.seconds += t.seconds();
  }

  CudaInProcessGroup& g_;
  const int r_;
  const CudaRankPlace place_;
  float* scratch_ = nullptr;  // this rank's chunk of the sum, on its GPU
  std::int64_t capacity_ = 0;
};

CudaInProcessGroup::CudaInProcessGroup(std::vector<CudaRankPlace> places)
    : places_(std::move(places)),
      barrier_(static_cast<int>(places_.size())),
      posted_(places_.size()),
      chunks_(places_.size()) {
  const int n = size();
  if (n < 1 || n > kMaxSumRanks) {
    throw RuntimeError("a CUDA in-process group has 1 to " + std::to_string(kMaxSumRanks) + " ranks, not " + std::to_string(n));
  }
  // Each rank's reduce kernel reads every other rank's buffer: GPUs that differ need peer access.
  for (const CudaRankPlace& a : places_) {
    for (const CudaRankPlace& b : places_) {
      if (a.gpu == b.gpu) continue;
      int can = 0;
      PLEXUS_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a.gpu, b.gpu), "checking peer access between GPUs");
      if (can == 0) {
        throw RuntimeError("tensor parallelism across GPUs " + std::to_string(a.gpu) + " and " + std::to_string(b.gpu) +
                           ": GPU " + std::to_string(a.gpu) + " cannot read GPU " + std::to_string(b.gpu) +
                           "'s memory (no peer access), which the CUDA in-process all-reduce needs; use NCCL (unset "
                           "PLEXUS_TP_COLLECTIVE, build where nccl.h is found) or a --tp whose ranks share a GPU");
      }
      GpuScope scope(a.gpu, "selecting GPU " + std::to_string(a.gpu) + " to enable peer access");
      const cudaError_t e = cudaDeviceEnablePeerAccess(b.gpu, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();
      } else {
        PLEXUS_CUDA_CHECK(e, "enabling peer access from GPU " + std::to_string(a.gpu) + " to GPU " + std::to_string(b.gpu));
      }
    }
  }
  for (int r = 0; r < n; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r));
}

CudaInProcessGroup::~CudaInProcessGroup() = default;

Collective& CudaInProcessGroup::rank(int r) {
  assert(r >= 0 && r < size());
  return *ranks_[static_cast<std::size_t>(r)];
}

}  // namespace plexus::cuda

// NCCL communicators and the Collective each rank calls.
#include "comm/cuda/nccl_group.h"

#include <cassert>
#include <mutex>
#include <set>

#include "comm/cuda/nccl_library.h"
#include "core/error.h"
#include "core/timer.h"
#include "core/units.h"
#include "kernels/cuda/cuda_check.h"

namespace plexus::cuda {

// Whether the group was aborted, and why (the first reason).
struct NcclAbort {
  std::mutex mutex;
  bool aborted = false;
  std::string why;
  void throw_if_aborted() {
    std::lock_guard lock(mutex);
    if (aborted) throw RuntimeError(why);
  }
};

namespace {

class NcclRank : public Collective {
 public:
  // `group`: the in-process group this rank belongs to (abort() aborts all of it), else null and
  // `host_world`: the processes' collective (abort() aborts this communicator, then it).
  NcclRank(const NcclLibrary& lib, ncclComm_t comm, int rank, int size, CudaRankPlace place, std::shared_ptr<NcclAbort> abort,
           NcclGroup* group, Collective* host_world)
      : lib_(lib), comm_(comm), r_(rank), n_(size), place_(std::move(place)), abort_(std::move(abort)), group_(group),
        host_world_(host_world) {
    GpuScope gpu(place_.gpu, who() + ": selecting the GPU");
    PLEXUS_CUDA_CHECK(cudaMalloc(&one_, sizeof(float)), who() + ": allocating the barrier's float");
    PLEXUS_CUDA_CHECK(cudaMemsetAsync(one_, 0, sizeof(float), place_.stream), who() + ": clearing the barrier's float");  // stays 0
  }
  ~NcclRank() override {
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (previous != place_.gpu) cudaSetDevice(place_.gpu);
    bool aborted = false;
    {
      std::lock_guard lock(abort_->mutex);
      aborted = abort_->aborted;
    }
    if (!aborted) {
      cudaStreamSynchronize(place_.stream);  // nothing of ours still in flight
      lib_.comm_destroy(comm_);
    }  // aborted: abort() released the communicator
    cudaFree(one_);
    if (previous >= 0 && previous != place_.gpu) cudaSetDevice(previous);
    cudaGetLastError();
  }

  int rank() const override { return r_; }
  int size() const override { return n_; }
  std::string kind() const override { return "nccl"; }

  void all_reduce_sum(float* data, std::int64_t count) override {
    Timer t;
    enter("an all-reduce");
    lib_.check(lib_.all_reduce(data, data, static_cast<std::size_t>(count), ncclFloat32, ncclSum, comm_, place_.stream),
               "ncclAllReduce", who() + ": all-reduce of " + std::to_string(count) + " floats");
    count_op(stats_.all_reduce, count * static_cast<std::int64_t>(sizeof(float)), t);
  }

  void all_gather(const float* in, std::int64_t count, float* out) override {
    Timer t;
    enter("an all-gather");
    lib_.check(lib_.all_gather(in, out, static_cast<std::size_t>(count), ncclFloat32, comm_, place_.stream), "ncclAllGather",
               who() + ": all-gather of " + std::to_string(count) + " floats");
    count_op(stats_.all_gather, count * static_cast<std::int64_t>(sizeof(float)), t);
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    assert(root >= 0 && root < n_);
    Timer t;
    enter("a broadcast");
    lib_.check(lib_.broadcast(data, data, bytes, ncclInt8, root, comm_, place_.stream), "ncclBroadcast",
               who() + ": broadcast of " + format_bytes(bytes) + " from rank " + std::to_string(root));
    count_op(stats_.broadcast, static_cast<std::int64_t>(bytes), t);
  }

  // NCCL has no barrier: an all-reduce of one float, waited for on the host.
  void barrier() override {
    enter("a barrier");
    lib_.check(lib_.all_reduce(one_, one_, 1, ncclFloat32, ncclSum, comm_, place_.stream), "ncclAllReduce",
               who() + ": barrier");
    PLEXUS_CUDA_CHECK(cudaStreamSynchronize(place_.stream), who() + ": waiting for the barrier");
  }

  void abort(const std::string& why) override {
    if (group_ != nullptr) {
      group_->abort(why);
      return;
    }
    bool first = false;
    {
      std::lock_guard lock(abort_->mutex);
      first = !abort_->aborted;
      if (first) {
        abort_->aborted = true;
        abort_->why = why.empty() ? "a tensor-parallel rank failed" : why;
      }
    }
    if (first) abort_comm();
    if (host_world_ != nullptr) host_world_->abort(why);
  }

  // Ends this rank's communicator and whatever is in flight on it (after the group aborted).
  void abort_comm() { lib_.comm_abort(comm_); }

 private:
  std::string who() const { return place_.name.empty() ? "NCCL rank " + std::to_string(r_) + " (GPU " + std::to_string(place_.gpu) + ")" : place_.name; }
  void enter(const char* op) {
    abort_->throw_if_aborted();
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != place_.gpu)
      PLEXUS_CUDA_CHECK(cudaSetDevice(place_.gpu), who() + ": selecting the GPU for " + op);
  }
  static void count_op(CommStats::Op& op, std::int64_t bytes, const Timer& t) {
    ++op.calls;
    op.bytes += bytes;
    op.seconds += t.seconds();
  }

  const NcclLibrary& lib_;
  ncclComm_t comm_;
  const int r_, n_;
  const CudaRankPlace place_;
  std::shared_ptr<NcclAbort> abort_;
  NcclGroup* group_;
  Collective* host_world_;
  float* one_ = nullptr;  // the barrier's all-reduce
};

}  // namespace

NcclGroup::NcclGroup(std::vector<CudaRankPlace> places) : abort_(std::make_shared<NcclAbort>()) {
  const NcclLibrary& lib = NcclLibrary::get();
  std::vector<int> gpus;
  for (const CudaRankPlace& p : places) gpus.push_back(p.gpu);
  if (std::set<int>(gpus.begin(), gpus.end()).size() != gpus.size()) {
    throw RuntimeError("NCCL needs a GPU per rank, but " + std::to_string(gpus.size()) +
                       " ranks share fewer GPUs (use the CUDA in-process group)");
  }
  std::vector<ncclComm_t> comms(places.size(), nullptr);
  lib.check(lib.comm_init_all(comms.data(), static_cast<int>(comms.size()), gpus.data()), "ncclCommInitAll",
            "making the NCCL communicators of " + std::to_string(comms.size()) + " GPUs (" + lib.path() + ")");
  for (std::size_t r = 0; r < places.size(); ++r) {
    ranks_.push_back(std::make_unique<NcclRank>(lib, comms[r], static_cast<int>(r), static_cast<int>(places.size()),
                                                places[r], abort_, this, nullptr));
  }
}

NcclGroup::~NcclGroup() = default;

Collective& NcclGroup::rank(int r) {
  assert(r >= 0 && r < size());
  return *ranks_[static_cast<std::size_t>(r)];
}

void NcclGroup::abort(const std::string& why) {
  {
    std::lock_guard lock(abort_->mutex);
    if (abort_->aborted) return;
    abort_->aborted = true;
    abort_->why = why.empty() ? "a tensor-parallel rank failed" : why;
  }
  for (auto& r : ranks_) static_cast<NcclRank&>(*r).abort_comm();
}

std::unique_ptr<Collective> make_nccl_rank(Collective& host_world, const CudaRankPlace& place) {
  const NcclLibrary& lib = NcclLibrary::get();
  ncclUniqueId id{};
  if (host_world.rank() == 0) lib.check(lib.get_unique_id(&id), "ncclGetUniqueId", "making the NCCL group's id");
  host_world.broadcast(&id, sizeof id, 0);
  ncclComm_t comm = nullptr;
  {
    GpuScope gpu(place.gpu, "selecting GPU " + std::to_string(place.gpu) + " for NCCL");
    lib.check(lib.comm_init_rank(&comm, host_world.size(), id, host_world.rank()), "ncclCommInitRank",
              "rank " + std::to_string(host_world.rank()) + " of " + std::to_string(host_world.size()) + " joining the NCCL group on GPU " +
                  std::to_string(place.gpu));
  }
  return std::make_unique<NcclRank>(lib, comm, host_world.rank(), host_world.size(), place, std::make_shared<NcclAbort>(),
                                    nullptr, &host_world);
}

}  // namespace plexus::cuda

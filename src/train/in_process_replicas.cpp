// In-process replicas: one thread, pool and TrainOps per rank over one InProcessGroup; the first
// failure aborts the group and is rethrown once every rank has ended.
#include "train/in_process_replicas.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/in_process_group.h"
#include "train/cpu_train_ops.h"

namespace plexus {

std::unique_ptr<TrainOps> make_cpu_train_ops(ThreadPool& pool, TrainPrecision precision) {
  return std::make_unique<CpuTrainOps>(pool, precision);
}

int replica_threads(int threads, int replicas, int rank) {
  const int total = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (total <= replicas) return 1;
  return total / replicas + (rank < total % replicas ? 1 : 0);
}

void run_in_process_replicas(int replicas, int threads, const std::function<void(ReplicaRank&)>& fn,
                             const MakeTrainOps& make_ops, WaitPolicy wait) {
  InProcessGroup group(replicas);
  std::mutex mutex;
  std::exception_ptr first;
  auto run_rank = [&](int r) {
    try {
      ThreadPool pool(replica_threads(threads, replicas, r), wait);
      std::unique_ptr<TrainOps> ops = make_ops ? make_ops(r, pool) : make_cpu_train_ops(pool);
      ReplicaRank rank{r, replicas, group.rank(r), *ops, pool};
      fn(rank);
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(mutex);
        if (!first) first = std::current_exception();
      }
      group.abort(e.what());
    } catch (...) {
      {
        std::lock_guard lock(mutex);
        if (!first) first = std::current_exception();
      }
      group.abort("a replica failed");
    }
  };
  std::vector<std::thread> others;
  others.reserve(static_cast<std::size_t>(replicas - 1));
  for (int r = 1; r < replicas; ++r) others.emplace_back(run_rank, r);
  run_rank(0);
  for (std::thread& t : others) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace plexus

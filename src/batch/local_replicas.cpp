// In-process replica threads.
#include "batch/local_replicas.h"

#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"

namespace plexus::batch {

std::vector<std::shared_ptr<Runner>> open_replicas(int count, const RunnerFactory& open, std::vector<std::string>* errors) {
  const std::size_t n = static_cast<std::size_t>(count);
  std::vector<std::shared_ptr<Runner>> runners(n);
  std::vector<std::exception_ptr> failures(n);
  {
    std::vector<std::jthread> threads;
    for (std::size_t r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        try {
          runners[r] = open(static_cast<int>(r));
        } catch (...) {
          failures[r] = std::current_exception();
        }
      });
    }
  }
  errors->assign(n, "");
  for (std::size_t r = 0; r < n; ++r) {
    if (!failures[r]) continue;
    try {
      std::rethrow_exception(failures[r]);
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      (*errors)[r] = e.what();
    }
  }
  return runners;
}

void run_local_replicas(Coordinator& coordinator, const std::vector<std::shared_ptr<Runner>>& runners,
                        const std::vector<std::string>& open_errors, std::size_t batch_size,
                        const std::vector<std::int64_t>& stop_ids, const ReplicaGrammars::VocabularyFactory& vocabulary,
                        const FaultInjection& faults) {
  for (std::size_t r = 0; r < runners.size(); ++r) {
    if (!runners[r]) coordinator.replica_lost(static_cast<int>(r), "could not start: " + open_errors[r]);
  }
  std::mutex error_mutex;
  std::exception_ptr error;  // the first failure of the run itself (e.g. the output cannot be written)
  {
    std::vector<std::jthread> threads;
    for (std::size_t r = 0; r < runners.size(); ++r) {
      if (!runners[r]) continue;
      threads.emplace_back([&, r] {
        const int replica = static_cast<int>(r);
        try {
          ReplicaGrammars grammars(vocabulary);
          for (;;) {
            const std::vector<std::size_t> taken = coordinator.queue().take(replica, batch_size);
            if (taken.empty()) break;
            coordinator.commit(run_tasks(*runners[r], replica, coordinator.tasks(taken), stop_ids, grammars, batch_size, faults));
          }
        } catch (...) {
          {
            std::lock_guard lock(error_mutex);
            if (!error) error = std::current_exception();
          }
          coordinator.queue().cancel();  // the others stop too; what was committed stays
        }
      });
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace plexus::batch

// Replicas as threads of this process, each with its own Runner (its own engine, threads and
// device group), all pulling from the coordinator's queue.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "batch/coordinator.h"
#include "batch/fault_injection.h"
#include "batch/replica_grammars.h"
#include "runtime/runner.h"

namespace plexus::batch {

using RunnerFactory = std::function<std::shared_ptr<Runner>(int replica)>;

// Opens `count` runners side by side (one thread each). An InputError from any is rethrown (bad
// flags are bad for all); a replica failing otherwise is left null with its message in `errors`.
std::vector<std::shared_ptr<Runner>> open_replicas(int count, const RunnerFactory& open, std::vector<std::string>* errors);

// Runs the queue to the end with one thread per runner (null runners are reported lost), each
// with its own ReplicaGrammars made with `vocabulary`; `batch_size`: requests taken at once and
// choices generated together at most.
void run_local_replicas(Coordinator& coordinator, const std::vector<std::shared_ptr<Runner>>& runners,
                        const std::vector<std::string>& open_errors, std::size_t batch_size,
                        const std::vector<std::int64_t>& stop_ids, const ReplicaGrammars::VocabularyFactory& vocabulary,
                        const FaultInjection& faults);

}  // namespace plexus::batch

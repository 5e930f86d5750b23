// MPI coordinator/worker protocol of `plexus batch` (JSON messages over MPI_CHAR).
#include "batch/mpi_transport.h"

#include <chrono>
#include <mpi.h>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"

namespace plexus::batch {

namespace {

constexpr int kTagToCoordinator = 1;  // {"results": [...]} or {"fatal": reason}
constexpr int kTagToWorker = 2;       // {"tasks": [...], "stop_ids": [...], "max_sequences": N} or {"stop": true}

void send_json(int dest, int tag, const Json& j) {
  const std::string text = j.dump();
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD);
}

// Waits for a message with `tag` from `source` (MPI_ANY_SOURCE allowed). Polls with short sleeps
// rather than MPI's busy wait, so a waiting rank leaves the cores to the replicas.
Json recv_json(int source, int tag, int* from) {
  MPI_Status status;
  for (int flag = 0;;) {
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status);
    if (flag) break;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (from) *from = status.MPI_SOURCE;
  return Json::parse(text);
}

}  // namespace

void run_mpi_coordinator(Coordinator& coordinator, const MpiWorld& world, std::size_t batch_size,
                         const std::vector<std::int64_t>& stop_ids) {
  std::set<int> active, waiting;  // worker ranks not yet stopped; those waiting for an answer
  for (int r = 1; r < world.size(); ++r) active.insert(r);
  std::vector<std::size_t> taken;
  while (!active.empty()) {
    int from = 0;
    const Json msg = recv_json(MPI_ANY_SOURCE, kTagToCoordinator, &from);
    const int replica = from - 1;
    if (msg.contains("results")) {
      std::vector<Outcome> outcomes;
      for (const Json& o : msg["results"]) outcomes.push_back(outcome_from_json(o));
      coordinator.commit(outcomes);
    }
    if (msg.contains("fatal")) {
      coordinator.replica_lost(replica, "could not start: " + msg["fatal"].get<std::string>());
      send_json(from, kTagToWorker, {{"stop", true}});
      active.erase(from);
    } else {
      waiting.insert(from);
    }
    // Answer every waiting worker the queue can answer now.
    for (auto it = waiting.begin(); it != waiting.end();) {
      const WorkQueue::Take t = coordinator.queue().try_take(*it - 1, batch_size, &taken);
      if (t == WorkQueue::Take::kWait) {
        ++it;
        continue;
      }
      if (t == WorkQueue::Take::kWork) {
        Json tasks = Json::array();
        for (const Task& task : coordinator.tasks(taken)) tasks.push_back(task_to_json(task));
        send_json(*it, kTagToWorker, {{"tasks", tasks}, {"stop_ids", stop_ids}, {"max_sequences", batch_size}});
      } else {
        send_json(*it, kTagToWorker, {{"stop", true}});
        active.erase(*it);
      }
      it = waiting.erase(it);
    }
  }
}

void run_mpi_worker(const MpiWorld& world, const std::function<std::shared_ptr<Runner>()>& open,
                    const ReplicaGrammars::VocabularyFactory& vocabulary, const FaultInjection& faults) {
  const int replica = world.rank() - 1;
  std::shared_ptr<Runner> runner;
  try {
    runner = open();
  } catch (const InputError&) {
    throw;  // bad flags are bad on every rank: the job ends with exit 2
  } catch (const std::exception& e) {
    send_json(0, kTagToCoordinator, {{"fatal", e.what()}});
    recv_json(0, kTagToWorker, nullptr);  // stop
    return;
  }
  ReplicaGrammars grammars(vocabulary);
  send_json(0, kTagToCoordinator, {{"results", Json::array()}});
  for (;;) {
    const Json msg = recv_json(0, kTagToWorker, nullptr);
    if (msg.contains("stop")) return;
    std::vector<Task> tasks;
    for (const Json& t : msg["tasks"]) tasks.push_back(task_from_json(t));
    const std::vector<std::int64_t> stop_ids = msg["stop_ids"].get<std::vector<std::int64_t>>();
    const auto max_sequences = msg["max_sequences"].get<std::size_t>();
    Json results = Json::array();
    for (const Outcome& o : run_tasks(*runner, replica, tasks, stop_ids, grammars, max_sequences, faults)) {
      results.push_back(outcome_to_json(o));
    }
    send_json(0, kTagToCoordinator, {{"results", results}});
  }
}

}  // namespace plexus::batch

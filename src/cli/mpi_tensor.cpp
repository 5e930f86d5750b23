// One tensor-parallel rank per MPI process: start-up checks, shared inputs, errors ending the job.
#include "cli/mpi_tensor.h"

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "comm/world_config.h"
#include "core/error.h"

namespace plexus::cli {

int tp_fail_rank() {
  const char* v = std::getenv("PLEXUS_TP_FAIL_RANK");
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long r = std::strtol(v, &end, 10);
  if (*end != '\0' || r < 0) throw InputError("PLEXUS_TP_FAIL_RANK must be a rank number, got '" + std::string(v) + "'");
  return static_cast<int>(r);
}

MpiTensorGroup::MpiTensorGroup() : world_(nullptr, nullptr), inputs_(), collective_(std::make_unique<MpiCollective>()) {}

MpiTensorGroup::~MpiTensorGroup() = default;

std::unique_ptr<MpiTensorGroup> MpiTensorGroup::join(const Args& args, const char* command) {
  if (!launched_by_mpi()) return nullptr;
  std::unique_ptr<MpiTensorGroup> g(new MpiTensorGroup());
  if (!g->root()) g->world_.silence_output();
  g->run(command, [&] {
    const WorldConfig w = make_world_config(args.get_int("--tensor-parallel"), args.get_int("--pipeline-parallel"), 1,
                                            args.get_int("--expert-parallel"));
    if (w.pp > 1) {
      throw InputError("--pp " + std::to_string(w.pp) + " under mpirun is not supported yet: the processes of an mpirun job "
                       "form one tensor-parallel group (mpirun -np N ... --tp N); run --pp in one process");
    }
    check_world_size(w, g->world_.size(), 0, "mpirun");
    return 0;
  });
  return g;
}

void MpiTensorGroup::share(std::vector<std::int32_t>& ids) {
  std::uint64_t n = ids.size();
  inputs_.broadcast(&n, sizeof n, 0);
  ids.resize(static_cast<std::size_t>(n));
  inputs_.broadcast(ids.data(), ids.size() * sizeof(std::int32_t), 0);
}

void MpiTensorGroup::share(std::vector<std::int64_t>& ids) {
  std::uint64_t n = ids.size();
  inputs_.broadcast(&n, sizeof n, 0);
  ids.resize(static_cast<std::size_t>(n));
  inputs_.broadcast(ids.data(), ids.size() * sizeof(std::int64_t), 0);
}

void MpiTensorGroup::configure(RunInputs& in) {
  if (!parallel()) return;
  if (in.engine.threads == 0) {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    in.engine.threads = std::max(1, hw / std::max(1, world_.local_size()));
  }
  in.inject_forward_failure = tp_fail_rank() == rank();
  in.process_group = [this]() -> std::unique_ptr<Collective> {
    if (!collective_) throw RuntimeError("internal: the MPI collective was taken twice");
    return std::move(collective_);
  };
}

int MpiTensorGroup::run(const char* command, const std::function<int()>& body) {
  if (!parallel()) return body();  // one rank: errors end it as any run's do
  int code = 0;
  std::string message;
  try {
    return body();
  } catch (const Error& e) {
    code = static_cast<int>(e.code());
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = 1;
    message = "out of memory";
  } catch (const std::exception& e) {
    code = 1;
    message = e.what();
  }
  if (!root() && code == static_cast<int>(ExitCode::kBadInput)) {
    // Bad input is bad on every rank: rank 0 says so and ends the job. This rank speaks only
    // if rank 0 did not (the input was bad for this rank alone).
    std::this_thread::sleep_for(std::chrono::seconds(3));
  }
  report_error(std::string("plexus ") + command + ": error (rank " + std::to_string(rank()) + " of " +
               std::to_string(world_.size()) + "): " + message);
  world_.abort(code);
}

}  // namespace plexus::cli

// `mpirun -np N plexus generate|perplexity MODEL --tp N`: every process is one rank of the
// tensor-parallel group. Rank 0 reads the input and prints the output; the inputs are broadcast so
// every rank runs the same loop (their logits are the same bits, so their sampling is too); ranks
// other than 0 print nothing. A rank that fails ends the job on every rank, naming the rank.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "comm/mpi_collective.h"
#include "comm/mpi_world.h"
#include "core/args.h"
#include "exec/model_run.h"

namespace plexus::cli {

class MpiTensorGroup {
 public:
  // Null unless an MPI launcher started this process (comm/mpi_world.h). Otherwise initialises
  // MPI and checks, before any weight is read, that the world is --tp × --pp ranks (--pp 1 only):
  // InputError naming the numbers. Ranks other than 0 are silenced.
  static std::unique_ptr<MpiTensorGroup> join(const Args& args, const char* command);
  ~MpiTensorGroup();

  int rank() const { return world_.rank(); }
  bool root() const { return world_.rank() == 0; }
  // More than one rank: the run is tensor-parallel across the processes.
  bool parallel() const { return world_.size() > 1; }
  // `ids` on every rank = rank 0's.
  void share(std::vector<std::int32_t>& ids);
  void share(std::vector<std::int64_t>& ids);
  // The run's inputs made a rank of the group: the collective, this machine's threads shared by
  // its ranks (when --threads is 0), the fault injection.
  void configure(RunInputs& in);
  // Runs the command's body. With several ranks an error on any rank is printed (naming the
  // rank) and ends every rank with the error's exit code (2 bad input, 1 otherwise).
  int run(const char* command, const std::function<int()>& body);

 private:
  MpiTensorGroup();
  MpiWorld world_;
  MpiCollective inputs_;                       // shares the inputs (its traffic is not the run's)
  std::unique_ptr<MpiCollective> collective_;  // the run's, until the run takes it
};

// The rank PLEXUS_TP_FAIL_RANK names (tests: that rank's first forward throws), or -1.
int tp_fail_rank();

}  // namespace plexus::cli

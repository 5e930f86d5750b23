// Run under mpirun by mpi_replica_test: one data-parallel rank per process over MpiCollective,
// a few steps of replica_run.h's batches on MODEL. Every rank prints "rank R step S loss L norm N"
// (%.17g); rank 0 writes its final weights (raw f32) to OUT_FILE; every rank prints its weights'
// FNV-1a hash, so the test sees that all ranks hold the same bits.
// Usage: mpi_replica_check MODEL B T STEPS ZERO1(0|1) OUT_FILE
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "comm/mpi_collective.h"
#include "comm/mpi_world.h"
#include "core/thread_pool.h"
#include "replica_run.h"

int main(int argc, char** argv) {
  plexus::MpiWorld world(&argc, &argv);
  if (argc != 7) {
    std::fprintf(stderr, "usage: mpi_replica_check MODEL B T STEPS ZERO1 OUT_FILE\n");
    return 2;
  }
  try {
    const std::string model_dir = argv[1];
    const std::int64_t B = std::atoll(argv[2]), T = std::atoll(argv[3]);
    const int steps = std::atoi(argv[4]);
    const bool zero1 = std::atoi(argv[5]) != 0;
    plexus::MpiCollective comm;
    const int rank = comm.rank(), ranks = comm.size();
    const plexus::ModelConfig config = plexus::load_model_config(model_dir);
    const plexus::LlamaTrainModel model(config);
    plexus::ThreadPool pool(1);
    plexus::RefTrainOps ops;
    plexus::ReplicaTrainer trainer(model, plexus::testing::initial_params(model_dir, model.layout()),
                                   plexus::testing::test_optimizer(), plexus::testing::batch_layout(B, ranks, B / ranks),
                                   zero1, comm, ops, &pool);
    for (int s = 0; s < steps; ++s) {
      const std::vector<std::int32_t> batch = plexus::testing::global_batch(s, B, T, config.vocab_size);
      const plexus::StepResult r = trainer.step(plexus::testing::rank_slice(batch, B, T, rank, ranks), T);
      std::printf("rank %d step %d loss %.17g norm %.17g\n", rank, s, r.loss, r.grad_norm);
    }
    std::uint64_t h = 1469598103934665603ull;
    for (const float x : trainer.params()) {
      std::uint32_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      for (int k = 0; k < 4; ++k) h = (h ^ ((bits >> (8 * k)) & 0xff)) * 1099511628211ull;
    }
    std::printf("rank %d weights %016llx\n", rank, static_cast<unsigned long long>(h));
    if (rank == 0) {
      std::ofstream out(argv[6], std::ios::binary);
      out.write(reinterpret_cast<const char*>(trainer.params().data()),
                static_cast<std::streamsize>(trainer.params().size() * sizeof(float)));
    }
    std::fflush(stdout);
  } catch (const std::exception& e) {
    plexus::report_error(std::string("mpi_replica_check: ") + e.what());
    world.abort(1);
  }
  return 0;
}

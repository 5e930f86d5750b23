// train_gemm's dispatch to the kernels of one ISA.
#include "kernels/cpu/train_gemm.h"

namespace plexus {

namespace {

void run(Isa isa, ThreadPool* pool, const GemmArgs& g) {
  if (g.bf16) return isa == Isa::kAvx512Bf16 ? train_gemm_bf16_avx512bf16(pool, g) : train_gemm_bf16_generic(pool, g);
  switch (isa) {
    case Isa::kGeneric:
      return train_gemm_generic(pool, g);
    case Isa::kAvx2:
      return train_gemm_avx2(pool, g);
    case Isa::kAvx512:
    case Isa::kAvx512Bf16:
      return train_gemm_avx512(pool, g);
  }
}

}  // namespace

void train_gemm(Isa isa, ThreadPool& pool, const GemmArgs& g) { run(isa, &pool, g); }

void train_gemm_serial(Isa isa, const GemmArgs& g) { run(isa, nullptr, g); }

}  // namespace plexus

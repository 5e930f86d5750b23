// The f32 matrix product of training, multi-threaded and deterministic: C (M, N) (+)= A · B
// with A and B read through strides, so one routine serves y = x·wᵀ, dx = dy·w and dw += dyᵀ·x.
// Every element of C is summed over k in the same order whatever the number of threads or their
// timing (threads split C, never a sum), so the bits depend only on the ISA (bf16 products: not
// even on that).
#pragma once
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/cpu/isa.h"

namespace plexus {

struct GemmArgs {
  std::int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  // A(i, p) = a[i * a_rs + p * a_cs]; one of the strides is 1
  std::int64_t a_rs = 0, a_cs = 0;
  const float* b = nullptr;  // B(p, j) = b[p * b_rs + j * b_cs]; one of the strides is 1
  std::int64_t b_rs = 0, b_cs = 0;
  float* c = nullptr;  // C(i, j) = c[i * ldc + j]
  std::int64_t ldc = 0;
  bool accumulate = false;  // C += A·B, else C = A·B
  // Every element of A and B rounded to bf16 (f32_to_bf16_ftz, core/dtype.h) as it is read: the
  // products of bf16 mixed-precision training, summed in f32 in vdpbf16ps's order
  // (train_gemm_bf16_impl.h) — the same bits on every ISA: vdpbf16ps when isa is avx512bf16
  // (the caller checked that the CPU has it), its plain emulation otherwise.
  bool bf16 = false;
};

// Runs on `pool` with the kernels of `isa` (kAvx512Bf16 runs the avx512 ones in f32); the caller's
// thread keeps the packing scratch (thread_local), so pools on different threads may run at once.
void train_gemm(Isa isa, ThreadPool& pool, const GemmArgs& g);
// The same product (the same bits) on the calling thread alone: for work that is already split
// across a pool's threads (attention's blocks).
void train_gemm_serial(Isa isa, const GemmArgs& g);

// The per-ISA implementations behind train_gemm (train_gemm_<isa>.cpp); pool null: serial.
void train_gemm_generic(ThreadPool* pool, const GemmArgs& g);
void train_gemm_avx2(ThreadPool* pool, const GemmArgs& g);
void train_gemm_avx512(ThreadPool* pool, const GemmArgs& g);
// GemmArgs::bf16 products: the plain emulation, and vdpbf16ps (only where the CPU has AVX512_BF16).
void train_gemm_bf16_generic(ThreadPool* pool, const GemmArgs& g);
void train_gemm_bf16_avx512bf16(ThreadPool* pool, const GemmArgs& g);

}  // namespace plexus

// Instruction-set dispatch: one table of primitive kernels per ISA, chosen once at run time.
// Every table computes dot products with the same 8-lane order (lanes summed as
// (l0+l4)+(l2+l6) + (l1+l5)+(l3+l7), then the tail), so all paths give bitwise-equal matmuls.
#pragma once
#include <cstdint>
#include <string_view>

#include "core/dtype.h"

namespace plexus {

struct IsaKernels {
  std::string_view name;  // "generic" | "avx2" | "avx512" | "avx512bf16"
  // Rows of dot_tile's register tile for many tokens: row blocks that are a multiple of it
  // leave no remainder tiles.
  std::int64_t tile_rows;
  // Y[t*ldy + r] = dot(X[t*ldx + 0..K), W row r) for t < nt, r < nr; W rows are ldw elements
  // apart, in `wt`. Any nt, nr >= 1.
  void (*dot_tile)(DType wt, const void* w, std::int64_t ldw, const float* x, std::int64_t ldx, float* y,
                   std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k);
  // dst (n) = float(src (n) of `t`).
  void (*to_f32)(DType t, const void* src, float* dst, std::int64_t n);
  // sum a[i] * b[i]
  float (*dot)(const float* a, const float* b, std::int64_t n);
  // y[i] += a * x[i]
  void (*axpy)(float a, const float* x, float* y, std::int64_t n);
  // out (d) = sum over j < n of w[j] * rows[j * ld + 0..d), accumulated in j order per element.
  void (*weighted_rows)(const float* w, std::int64_t n, const float* rows, std::int64_t ld, float* out,
                        std::int64_t d);
  // y[i] *= a
  void (*scale)(float a, float* y, std::int64_t n);
  // x[i] = exp(x[i] - shift); returns the sum of the results.
  float (*exp_shift_sum)(float* x, float shift, std::int64_t n);
  // out[i] = silu(gate[i]) * up[i]
  void (*silu_mul)(const float* gate, const float* up, float* out, std::int64_t n);
  // sum x[i]^2
  float (*sum_squares)(const float* x, std::int64_t n);
  // true: matmul multiplies bf16 weights with 4+ tokens in place by dot_tile_bf16, against the
  // activations rounded to bf16 once per launch by round_bf16 (not bitwise equal to dot_tile),
  // instead of converting row blocks to f32. Only the opt-in avx512bf16 table; the others leave
  // both functions null.
  bool prefill_bf16_in_place;
  // The most tokens for which matmul hands bf16/f16 weights to dot_tile in place (batched decode
  // streams them once); more tokens convert row blocks to f32 first, which pays once the
  // conversion is shared by enough tokens. Same bits either way.
  std::int64_t stream_max_tokens;
  // out (n, k) = x (n, ldx) rounded to bf16 (nearest even), row t of n.
  void (*round_bf16)(const float* x, std::int64_t ldx, std::int64_t n, std::int64_t k, std::uint16_t* out) = nullptr;
  // dot_tile with bf16 weights and bf16 x: Y[t*ldy + r] = dot(X[t*ldx + 0..K), W row r), f32 sums.
  void (*dot_tile_bf16)(const std::uint16_t* w, std::int64_t ldw, const std::uint16_t* x, std::int64_t ldx, float* y,
                        std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) = nullptr;
  // Block-format weights (every block format: kernels/block_formats.h) times activations
  // quantised by quantize_x (kernels/cpu/quant_x.h): Y[t*ldy + r] = dot(token t of xq, W row r),
  // W rows ldw bytes apart in format wt, xq rows ldxq bytes apart; k a multiple of the block. Any
  // nt, nr >= 1. Every table gives the same bits (quant_kernels.h says the order).
  void (*dot_tile_q)(DType wt, const void* w, std::int64_t ldw, const void* xq, std::int64_t ldxq, float* y,
                     std::int64_t ldy, std::int64_t nt, std::int64_t nr, std::int64_t k) = nullptr;
};

// kAvx512Bf16 is opt-in: its matmuls are not bitwise equal to the others' (bf16-rounded
// activations in prefill matmuls of bf16 weights; see kernels_avx512bf16.cpp), never chosen
// unless asked for.
enum class Isa { kGeneric, kAvx2, kAvx512, kAvx512Bf16 };

// The best bitwise-exact ISA this CPU supports (avx512, else avx2, else generic), unless
// PLEXUS_ISA=generic|avx2|avx512|avx512bf16 asks for another. A request this CPU cannot run, or
// an unknown name, falls back to the best supported one with one warning line on stderr.
Isa best_isa();
bool isa_supported(Isa isa);
// AVX512_VNNI (the avx512 tables then multiply quantised weights with dpbusd).
bool cpu_has_avx512_vnni();
const IsaKernels& isa_kernels(Isa isa);
std::string_view isa_name(Isa isa);

const IsaKernels& generic_kernels();
const IsaKernels& avx2_kernels();    // only call when the CPU has AVX2 + FMA + F16C
const IsaKernels& avx512_kernels();  // only call when isa_supported(Isa::kAvx512)
const IsaKernels& avx512bf16_kernels();  // only call when isa_supported(Isa::kAvx512Bf16)

}  // namespace plexus

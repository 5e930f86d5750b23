// The per-format quantisers behind quantize_row (kernels/quantize.h), one family per file:
// quantize.cpp (the 32-weight round-to-nearest formats), quantize_k.cpp (the K super-blocks),
// quantize_iq4.cpp (IQ4_NL and IQ4_XS). `nb` is the number of blocks at x and b.
#pragma once
#include <cstdint>

#include "kernels/block_formats.h"

namespace plexus::quant {

void q2_k(const float* x, BlockQ2_K* b, std::int64_t nb);
void q3_k(const float* x, BlockQ3_K* b, std::int64_t nb);
void q4_k(const float* x, BlockQ4_K* b, std::int64_t nb);
void q5_k(const float* x, BlockQ5_K* b, std::int64_t nb);
void q6_k(const float* x, BlockQ6_K* b, std::int64_t nb);
void iq4_nl(const float* x, BlockIQ4_NL* b, std::int64_t nb);
void iq4_xs(const float* x, BlockIQ4_XS* b, std::int64_t nb);

}  // namespace plexus::quant

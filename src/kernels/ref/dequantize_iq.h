// The dequantisation oracle of llama.cpp's codebook types — IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M (super-blocks of 256; their codebooks in kernels/iq_grids.h) — plain scalar code
// computing each weight as the f32 expression of GGUF's reference decoder (gguf-py), so the
// values are exact. plexus reads these types (they need an importance matrix to be written, which
// plexus does not make) by converting them at load (model/checkpoint_iq.cpp).
#pragma once
#include <cstdint>

namespace plexus {

// GGUF type codes of the codebook types.
enum class IqType : std::uint32_t { kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ3_S = 21, kIQ2_S = 22, kIQ1_M = 29 };

// Whether GGUF type `code` is one of them (then *t is it).
bool iq_type_of_code(std::uint32_t code, IqType* t);

// Bytes of one super-block of 256 weights of type t.
std::int64_t iq_block_bytes(IqType t);

// dst (n) = the values of n elements of type t at src; n a multiple of 256.
void dequantize_iq_row(IqType t, const void* src, float* dst, std::int64_t n);

}  // namespace plexus

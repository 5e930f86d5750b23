// Hugging Face's MXFP4 checkpoint layout (gpt-oss: NAME_blocks + NAME_scales, both uint8) repacked
// into plexus's MXFP4 blocks (BlockMXFP4, GGUF type 39) byte for byte, without dequantising.
#pragma once
#include <cstdint>

namespace plexus {

// Hugging Face stores an MXFP4 matrix W (rows, cols), rows the output features, as
//   NAME_blocks  uint8 (..., rows, cols / 32, 16): block b of a row holds its elements 32b + 2i
//                (the low nibble of byte i) and 32b + 2i + 1 (the high nibble), i < 16;
//   NAME_scales  uint8 (..., rows, cols / 32): block b's E8M0 exponent e, scale 2^(e − 127);
// (transformers' convert_moe_packed_tensors: element 2i low nibble, 2i + 1 high, ldexp by e − 127;
// the leading dims, e.g. gpt-oss's experts, are whole matrices one after another). BlockMXFP4
// keeps e and the same E2M1 codes, but element j (j < 16) in the low nibble of qs[j] and j + 16 in
// its high nibble. Both layouts run over a row's blocks in order, so any run of whole blocks
// repacks at once: one row (nb = cols / 32), a matrix (rows · cols / 32) or a whole tensor.
//
// out (nb BlockMXFP4, 17 · nb bytes) = the nb blocks of blocks (16 · nb bytes) and scales (nb
// bytes). The result is a WeightMatrix{out, DType::kMXFP4, rows, cols} as stored.
void mxfp4_from_hf_blocks(const std::uint8_t* blocks, const std::uint8_t* scales, std::int64_t nb, void* out);

// The inverse: blocks (16 · nb bytes) and scales (nb bytes) in Hugging Face's layout from nb
// BlockMXFP4 (17 · nb bytes at `in`), byte for byte (mxfp4_from_hf_blocks of the result gives `in`
// back). make-model writes gpt-oss's MXFP4 experts with it.
void mxfp4_to_hf_blocks(const void* in, std::int64_t nb, std::uint8_t* blocks, std::uint8_t* scales);

}  // namespace plexus

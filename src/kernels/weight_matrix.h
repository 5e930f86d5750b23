// Weights as the compute reads them, device-neutral (the pointers are in the memory of the
// device that computes): a read-only matrix in its checkpoint dtype, viewed in place, (rows,
// cols) row-major — or stored transposed, (cols, in_out_ld), as GPT-2's Conv1D weights are; a
// small f32 vector (a norm's or a bias's); and one destination of a matrix product.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace plexus {

struct WeightMatrix {
  const void* data = nullptr;  // (rows, cols) elements of `dtype`, rows row_bytes() apart
  DType dtype = DType::kF32;   // an element type, or a block format (cols a multiple of its block)
  std::int64_t rows = 0;       // output features
  std::int64_t cols = 0;       // input features
  // Tensor parallelism (model/tensor_split.h): this matrix holds a slice of the input features,
  // so its product is one rank's partial sum, summed across the group before it is used
  // (exec/tensor_parallel_ops.h). The architecture never reads it.
  bool partial_sum = false;
  // Stored (in, out), read in place (GPT-2's Conv1D weights, checkpoint_gpt2.cpp): 0 for the
  // ordinary (rows, cols) layout; else element (r, c) — output r, input c — is at
  // data[c · in_out_ld + r], so the matrix is columns [0, rows) of a stored (cols, in_out_ld)
  // one (in_out_ld > rows: a column slice, c_attn's q, k or v). Only F32, BF16 and F16 (a block
  // format's blocks run along a row). row() and row_bytes() are of the (rows, cols) layout only.
  std::int64_t in_out_ld = 0;
  bool in_out() const { return in_out_ld != 0; }
  std::int64_t row_bytes() const { return dtype_row_bytes(dtype, cols); }
  // The bytes from data to the last element: (cols - 1) · in_out_ld + rows elements stored (in, out).
  std::int64_t bytes() const {
    if (in_out()) return cols == 0 ? 0 : ((cols - 1) * in_out_ld + rows) * static_cast<std::int64_t>(dtype_size(dtype));
    return rows * row_bytes();
  }
  const void* row(std::int64_t r) const { return static_cast<const std::uint8_t*>(data) + r * row_bytes(); }
};

struct VectorView {
  const float* data = nullptr;  // (size)
  std::int64_t size = 0;
  bool empty() const { return size == 0; }
};

// One weight of a matrix product and where its output goes.
struct MatmulPart {
  WeightMatrix w;
  float* y = nullptr;     // (n, ldy); columns [0, w.rows) are written
  std::int64_t ldy = 0;
};

}  // namespace plexus

// Weights as the compute reads them, device-neutral (the pointers are in the memory of the
// device that computes): a read-only matrix in its checkpoint dtype, viewed in place, (rows,
// cols) row-major; a small f32 vector (a norm's or a bias's); and one destination of a matrix
// product.
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
  std::int64_t row_bytes() const { return dtype_row_bytes(dtype, cols); }
  std::int64_t bytes() const { return rows * row_bytes(); }
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

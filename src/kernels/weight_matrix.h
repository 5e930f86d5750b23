// A read-only weight matrix in its checkpoint dtype, viewed in place: (rows, cols), row-major.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace plexus {

struct WeightMatrix {
  const void* data = nullptr;  // (rows, cols) elements of `dtype`, rows `cols` apart
  DType dtype = DType::kF32;
  std::int64_t rows = 0;       // output features
  std::int64_t cols = 0;       // input features
  std::int64_t bytes() const { return rows * cols * static_cast<std::int64_t>(dtype_size(dtype)); }
  const void* row(std::int64_t r) const {
    return static_cast<const std::uint8_t*>(data) + r * cols * static_cast<std::int64_t>(dtype_size(dtype));
  }
};

}  // namespace plexus

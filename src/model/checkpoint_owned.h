// A tensor a Checkpoint holds in its own memory rather than in a mapped file: a quantised copy,
// a codebook-type tensor converted to Q8_0, or a GPT-2 Conv1D weight transposed to (out, in).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "model/checkpoint.h"

namespace plexus {

struct Checkpoint::OwnedTensor {
  TensorInfo info;
  std::unique_ptr<std::uint8_t, decltype(&std::free)> bytes{nullptr, &std::free};
};

}  // namespace plexus

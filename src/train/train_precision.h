// The arithmetic of a training run (--precision): f32 throughout, or torch.autocast(bf16)'s mixed
// precision, where the inputs of the matrix products are rounded to bf16 and all else stays f32
// (train/train_ops.h says which values are rounded).
#pragma once
#include <string_view>

namespace plexus {

enum class TrainPrecision { kF32, kBf16 };

// "f32" | "bf16": the --precision spelling, also written in checkpoints and the run's JSON.
inline std::string_view precision_name(TrainPrecision p) {
  switch (p) {
    case TrainPrecision::kF32: return "f32";
    case TrainPrecision::kBf16: return "bf16";
  }
  return "f32";
}

}  // namespace plexus

// Random weights written fast, for checkpoints in real shapes (billions of parameters): values are
// drawn from a table of 65536 normal quantiles by 16 random bits each, with one small generator
// per run of 65536 elements seeded by (seed, tensor, run), so several threads fill large blocks
// while one writes them, and the bytes depend on nothing but the seed (not on threads or block size).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace plexus {

struct BulkTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  bool is_norm = false;     // values 1 + 0.1·z (a norm's weight) instead of std·z
  std::uint64_t index = 0;  // the tensor's place in the model, part of its seed
  // Written as MXFP4 in Hugging Face's layout (model/gpt_oss_mxfp4.h): the values (std·z, shape's
  // last dimension a multiple of 32) quantised, stored as NAME_blocks (..., last / 32, 16) and
  // NAME_scales (..., last / 32), both U8, one after the other.
  bool mxfp4 = false;
  std::int64_t numel() const;
};

struct BulkOptions {
  DType dtype = DType::kBF16;
  std::uint64_t seed = 0;
  double std = 0.02;
  int threads = 0;                          // generating threads; 0: one per hardware thread
  std::int64_t block_elements = 1LL << 24;  // per buffer, rounded up to whole runs of 65536
  std::function<bool()> stop_requested;     // polled between blocks: true throws Interrupted
  std::function<void(std::int64_t)> progress;  // after each block is written: its elements
};

// Writes one safetensors file to `path` atomically (core/atomic_file.h); returns the bytes written.
std::uint64_t write_bulk_safetensors(const std::string& path, const std::vector<BulkTensor>& tensors, const BulkOptions& o);

// The standard normal quantile at p in (0, 1) (Acklam's approximation, relative error < 1.2e-9).
double normal_quantile(double p);

}  // namespace plexus

// The global gradient norm in fixed blocks (deterministic over threads) and the clip factor.
#include "train/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"

namespace plexus {
namespace {

constexpr std::int64_t kBlock = 1 << 16;  // elements per partial sum

}  // namespace

double grad_norm(const ParamLayout& layout, const float* grads, ThreadPool* pool) {
  return grad_norm(layout.slots(), grads, pool);
}

double grad_norm(const std::vector<ParamSlot>& tensors, const float* grads, ThreadPool* pool) {
  // Every tensor cut into blocks of kBlock elements; block k sums its squares on some thread.
  struct Block {
    std::int64_t begin, end;
  };
  std::vector<Block> blocks;
  std::vector<std::size_t> first_block;  // (slots + 1) each tensor's first block
  for (const ParamSlot& s : tensors) {
    first_block.push_back(blocks.size());
    for (std::int64_t b = 0; b < s.count; b += kBlock) blocks.push_back({s.offset + b, s.offset + std::min(s.count, b + kBlock)});
  }
  first_block.push_back(blocks.size());
  std::vector<double> sums(blocks.size());
  auto sum_block = [&](std::int64_t k, int) {
    double acc = 0;
    for (std::int64_t i = blocks[static_cast<std::size_t>(k)].begin; i < blocks[static_cast<std::size_t>(k)].end; ++i) {
      const double g = grads[i];
      acc += g * g;
    }
    sums[static_cast<std::size_t>(k)] = acc;
  };
  if (pool != nullptr) {
    pool->run_chunks(static_cast<std::int64_t>(blocks.size()), ChunkFn(sum_block));
  } else {
    for (std::size_t k = 0; k < blocks.size(); ++k) sum_block(static_cast<std::int64_t>(k), 0);
  }
  double total = 0;
  for (std::size_t t = 0; t + 1 < first_block.size(); ++t) {
    double sq = 0;
    for (std::size_t k = first_block[t]; k < first_block[t + 1]; ++k) sq += sums[k];
    const double norm = std::sqrt(sq);  // the tensor's 2-norm
    total += norm * norm;
  }
  return std::sqrt(total);
}

double clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (norm + 1e-6));
}

}  // namespace plexus

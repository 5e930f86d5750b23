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

GradNormBlocks grad_norm_blocks(const std::vector<ParamSlot>& tensors) {
  GradNormBlocks b;
  for (const ParamSlot& s : tensors) {
    b.first_block.push_back(b.begin.size());
    for (std::int64_t k = 0; k < s.count; k += kBlock) {
      b.begin.push_back(s.offset + k);
      b.end.push_back(s.offset + std::min(s.count, k + kBlock));
    }
  }
  b.first_block.push_back(b.begin.size());
  return b;
}

double grad_norm_of_sums(const GradNormBlocks& blocks, const std::vector<double>& sums) {
  double total = 0;
  for (std::size_t t = 0; t + 1 < blocks.first_block.size(); ++t) {
    double sq = 0;
    for (std::size_t k = blocks.first_block[t]; k < blocks.first_block[t + 1]; ++k) sq += sums[k];
    const double norm = std::sqrt(sq);  // the tensor's 2-norm
    total += norm * norm;
  }
  return std::sqrt(total);
}

double grad_norm(const std::vector<ParamSlot>& tensors, const float* grads, ThreadPool* pool) {
  // Every tensor cut into blocks of kBlock elements; block k sums its squares on some thread.
  const GradNormBlocks blocks = grad_norm_blocks(tensors);
  std::vector<double> sums(blocks.begin.size());
  auto sum_block = [&](std::int64_t k, int) {
    double acc = 0;
    for (std::int64_t i = blocks.begin[static_cast<std::size_t>(k)]; i < blocks.end[static_cast<std::size_t>(k)]; ++i) {
      const double g = grads[i];
      acc += g * g;
    }
    sums[static_cast<std::size_t>(k)] = acc;
  };
  if (pool != nullptr) {
    pool->run_chunks(static_cast<std::int64_t>(sums.size()), ChunkFn(sum_block));
  } else {
    for (std::size_t k = 0; k < sums.size(); ++k) sum_block(static_cast<std::int64_t>(k), 0);
  }
  return grad_norm_of_sums(blocks, sums);
}

double clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (norm + 1e-6));
}

}  // namespace plexus

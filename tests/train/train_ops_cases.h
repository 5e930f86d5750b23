// The TrainOps test cases shared by CpuTrainOps' and CudaTrainOps' tests: every op on random
// inputs of odd shapes, the outputs by name, and their comparison with RefTrainOps' (or bitwise
// with another run's).
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "train/train_ops.h"

namespace plexus::testing_train {

std::vector<float> random_vec(std::int64_t n, std::mt19937& rng, float lo = -1, float hi = 1);

// Every op's outputs by name, for one implementation; the inputs are fixed by the seed.
struct Outputs {
  std::vector<std::pair<std::string, std::vector<float>>> named;
  std::vector<double> losses;
  // The reduction length behind each output (for its tolerance).
  std::vector<std::int64_t> depth;
  void put(std::string name, std::vector<float> v, std::int64_t k) {
    named.emplace_back(std::move(name), std::move(v));
    depth.push_back(k);
  }
};

// b sequences of T tokens, n_heads over n_kv_heads, head_dim, sliding window (0: none).
struct AttentionCase {
  std::int64_t b, T, n_heads, n_kv_heads, hd, window;
};

// Forward and backward of attention on each case (seeded inputs).
void run_attention(TrainOps& ops, Outputs& o, std::span<const AttentionCase> cases);
// Every op: the linear forms, the row-wise ops, the loss, embed, rope, add, zero and attention.
Outputs run_all(TrainOps& ops);
// The ops of Gemma and Phi-3 (train_ops.h "Gemma and Phi-3"): GeGLU and its backward, the
// soft-capped loss and attention (Gemma 2), scale, add_constant, the partial rope and its inverse
// (the CPU's alone: CudaTrainOps lacks them).
Outputs run_family_ops(TrainOps& ops);

// Gtest failures for each element of `got` off `want` by more than rel · (4 + sqrt(depth)) ·
// (1 + |want|) (float sums of `depth` terms of size ~1: error grows like sqrt(depth)), and for
// each loss off by more than 1e-5 · (1 + loss); returns the number of elements off.
int expect_near(const Outputs& got, const Outputs& want, const std::string& label, double rel);
// The same with output i's tolerance tolerance(i) · (1 + |want|).
int expect_near(const Outputs& got, const Outputs& want, const std::string& label,
                const std::function<double(std::size_t)>& tolerance);
// Gtest failures unless every output and loss is bitwise the same.
void expect_bitwise(const Outputs& a, const Outputs& b, const std::string& label);

}  // namespace plexus::testing_train

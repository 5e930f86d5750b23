// The training data of `plexus train`: a JSON-lines file of token sequences ({"ids": [...]} per
// non-empty line), checked whole before any step, and which sequences each step and rank take.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace plexus {

struct TrainData {
  std::string path;
  std::vector<std::int32_t> tokens;  // (sequences, T)
  std::int64_t sequences = 0, T = 0;
  std::uint64_t file_bytes = 0;
  std::string file_hash;  // FNV-1a 64 of the file's bytes, 16 hex digits (checkpoints compare it)
};

// Reads PATH: every non-blank line an object with "ids", a list of at least 2 integers in
// [0, vocab). seq_len > 0 cuts each sequence to its first seq_len tokens (a shorter one is an
// error); seq_len 0 takes the data's length, which must then be the same on every line.
// InputError naming PATH:LINE, the value and what to do, before anything else happens.
TrainData read_train_data(const std::string& path, std::int64_t vocab, std::int64_t seq_len);

// The sequences of step s (from 0) for rank r of R: the global batch is lines s·B … s·B+B−1 in
// file order, wrapping around; rank r takes the r-th contiguous B/R of them. out (B/R, T).
void step_sequences(const TrainData& data, std::int64_t step, std::int64_t global_batch, int rank, int ranks,
                    std::vector<std::int32_t>& out);

// FNV-1a 64 of bytes as 16 hex digits, continuing from `seed` (a previous call's value).
std::uint64_t fnv1a64(std::span<const unsigned char> bytes, std::uint64_t seed = 14695981039346656037ull);
std::string hex64(std::uint64_t v);

}  // namespace plexus

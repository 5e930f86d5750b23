// The training data: parsing, the errors naming FILE:LINE, --seq-len cuts, and the slice of the
// data each step and rank take (file order, wrapping around, contiguous per rank).
#include "train/train_data.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "test_util.h"

namespace plexus {
namespace {

std::string write(const testing::TempDir& dir, const std::string& text) {
  const std::string path = dir / "data.jsonl";
  std::ofstream(path) << text;
  return path;
}

// The InputError message of reading `text`, or "" when it reads.
std::string error_of(const std::string& text, std::int64_t seq_len = 0, std::int64_t vocab = 100) {
  testing::TempDir dir("train_data");
  const std::string path = write(dir, text);
  try {
    read_train_data(path, vocab, seq_len);
  } catch (const InputError& e) {
    return std::string(e.what()).replace(0, path.size(), "FILE");
  }
  return "";
}

TEST(TrainData, ReadsLinesSkipsBlanksAndHashesTheFile) {
  testing::TempDir dir("train_data");
  const std::string path = write(dir, "{\"ids\": [1, 2, 3]}\n\n  \n{\"ids\": [4, 5, 6]}\r\n{\"ids\":[7,8,9],\"x\":1}");
  const TrainData d = read_train_data(path, 10, 0);
  EXPECT_EQ(d.sequences, 3);
  EXPECT_EQ(d.T, 3);
  EXPECT_EQ(d.tokens, (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(d.file_hash.size(), 16u);
  EXPECT_GT(d.file_bytes, 0u);
  const TrainData cut = read_train_data(path, 10, 2);
  EXPECT_EQ(cut.T, 2);
  EXPECT_EQ(cut.tokens, (std::vector<std::int32_t>{1, 2, 4, 5, 7, 8}));
  std::ofstream(path, std::ios::app) << "\n{\"ids\": [1, 2, 4]}\n";
  EXPECT_NE(read_train_data(path, 10, 0).file_hash, d.file_hash);
}

TEST(TrainData, BadLinesNameFileAndLine) {
  EXPECT_NE(error_of("{\"ids\": [1, 2]}\nnope\n").find("FILE:2: invalid JSON"), std::string::npos);
  EXPECT_NE(error_of("{\"ids\": [1, 2]}\n\n{\"tokens\": [1, 2]}\n").find("FILE:3: no \"ids\""), std::string::npos);
  EXPECT_NE(error_of("[1, 2]\n").find("FILE:1: no \"ids\""), std::string::npos);
  EXPECT_NE(error_of("{\"ids\": \"1 2\"}\n").find("FILE:1: \"ids\" must be a list of integers"), std::string::npos);
  EXPECT_NE(error_of("{\"ids\": [1, 2.5]}\n").find("FILE:1: \"ids\"[1] is 2.5"), std::string::npos);
  EXPECT_NE(error_of("{\"ids\": [1, true]}\n").find("FILE:1: \"ids\"[1] is true"), std::string::npos);
  EXPECT_NE(error_of("{\"ids\": [1, 100]}\n").find("FILE:1: token id 100 (\"ids\"[1]) is outside the model's vocabulary [0, 100)"),
            std::string::npos);
  EXPECT_NE(error_of("{\"ids\": [-1, 2]}\n").find("FILE:1: token id -1"), std::string::npos);
  // 2^64 - 1 and 2^63 are named as written (a 64-bit cast made the first "token id -1").
  EXPECT_NE(error_of("{\"ids\": [1, 18446744073709551615]}\n").find("FILE:1: token id 18446744073709551615 (\"ids\"[1])"),
            std::string::npos);
  EXPECT_NE(error_of("{\"ids\": [9223372036854775808, 1]}\n").find("FILE:1: token id 9223372036854775808 (\"ids\"[0])"),
            std::string::npos);
  EXPECT_NE(error_of("{\"ids\": [1, 2]}\n{\"ids\": [3]}\n").find("FILE:2: a sequence of 1 token(s)"), std::string::npos);
  const std::string lengths = error_of("{\"ids\": [1, 2]}\n{\"ids\": [3, 4, 5]}\n");
  EXPECT_NE(lengths.find("FILE:2: a sequence of 3 tokens, but line 1 has 2: give --seq-len"), std::string::npos) << lengths;
  EXPECT_NE(error_of("{\"ids\": [1, 2, 3]}\n{\"ids\": [3, 4]}\n", 3).find("FILE:2: a sequence of 2 tokens is shorter than --seq-len 3"),
            std::string::npos);
  EXPECT_EQ(error_of("{\"ids\": [1, 2, 3]}\n{\"ids\": [3, 4]}\n", 2), "");
  EXPECT_NE(error_of("\n\n").find("no sequences"), std::string::npos);
  EXPECT_THROW(read_train_data("/nonexistent/data.jsonl", 10, 0), InputError);
}

TEST(TrainData, StepsTakeLinesInOrderWrappingRanksContiguous) {
  TrainData d;
  d.T = 2;
  d.sequences = 5;
  for (int i = 0; i < 5; ++i) d.tokens.insert(d.tokens.end(), {i, 10 + i});
  std::vector<std::int32_t> out;
  step_sequences(d, 0, 4, 0, 1, out);
  EXPECT_EQ(out, (std::vector<std::int32_t>{0, 10, 1, 11, 2, 12, 3, 13}));
  step_sequences(d, 1, 4, 0, 1, out);  // lines 4, 0, 1, 2
  EXPECT_EQ(out, (std::vector<std::int32_t>{4, 14, 0, 10, 1, 11, 2, 12}));
  step_sequences(d, 1, 4, 1, 2, out);  // rank 1 of 2: the second half, lines 1, 2
  EXPECT_EQ(out, (std::vector<std::int32_t>{1, 11, 2, 12}));
  step_sequences(d, 1, 4, 0, 2, out);
  EXPECT_EQ(out, (std::vector<std::int32_t>{4, 14, 0, 10}));
}

}  // namespace
}  // namespace plexus

// safetensors header validation: every malformed header gets an InputError naming the file
// and the tensor, never a crash.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace plexus {
namespace {

std::string file_bytes(const std::string& header, std::size_t data_bytes) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(n >> (8 * i));
  return out + header + std::string(data_bytes, '\x01');
}

std::string parse_error(const std::string& bytes) {
  std::uint64_t start = 0;
  try {
    parse_safetensors_header(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), bytes.size(), "f.safetensors", &start);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, AcceptsAValidHeader) {
  const std::string b = file_bytes(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]},"__metadata__":{"format":"pt"}})", 22);
  std::uint64_t start = 0;
  const auto t = parse_safetensors_header(reinterpret_cast<const std::uint8_t*>(b.data()), b.size(), b.size(), "f", &start);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "a");
  EXPECT_EQ(t[0].numel(), 4);
  EXPECT_EQ(t[1].dtype, DType::kBF16);
  EXPECT_EQ(start, b.size() - 22);
}

TEST(Safetensors, RejectsMalformedHeaders) {
  struct Bad {
    std::string bytes, must_mention;
  };
  const std::vector<Bad> cases = {
      {"abc", "truncated"},
      {file_bytes("{", 0), "invalid JSON"},
      {file_bytes("[1]", 0), "not a JSON object"},
      {file_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4), "'w'"},            // truncated data
      {file_bytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "need 12 bytes"},    // shape mismatch
      {file_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8), "end before"},
      {file_bytes(R"({"w":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}})", 8), "unknown dtype"},
      {file_bytes(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "shape"},
      {file_bytes(R"({"w":{"dtype":"F32","shape":[2]}})", 8), "data_offsets"},
      {file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "overlapping"},
      {file_bytes(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", 8), "too large"},
      // 2^62 elements of 4 bytes: the byte count wraps to 0, which matched empty data_offsets.
      {file_bytes(R"({"w":{"dtype":"F32","shape":[2147483648,2147483648],"data_offsets":[0,0]}})", 0), "needs more bytes than a 64-bit size"},
      {file_bytes(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0), "needs more bytes than a 64-bit size"},
      // A shape nested 60000 deep crashed the parser's callers.
      {file_bytes(R"({"w":{"dtype":"F32","shape":)" + std::string(60000, '[') + std::string(60000, ']') + R"(,"data_offsets":[0,0]}})", 0),
       "nested deeper than 256"},
  };
  for (const Bad& b : cases) {
    const std::string err = parse_error(b.bytes);
    EXPECT_NE(err.find(b.must_mention), std::string::npos) << "error was: " << err;
    if (b.bytes.size() > 8) {
      EXPECT_NE(err.find("f.safetensors"), std::string::npos) << err;
    }
  }
  // A header length that runs past the end of the file.
  std::string huge = file_bytes("{}", 0);
  huge[5] = 1;
  EXPECT_NE(parse_error(huge).find("past the end"), std::string::npos);
}

TEST(Checkpoint, ShardIndexErrorsNameTheFile) {
  testing::TempDir dir("index");
  std::ofstream(dir / "model.safetensors.index.json") << R"({"weight_map":{"w":"model-00001-of-00002.safetensors"}})";
  try {
    Checkpoint c(dir.path());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model-00001-of-00002.safetensors"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "model.safetensors.index.json") << R"({"weight_map":{"w":"../x.safetensors"}})";
  EXPECT_THROW(Checkpoint c(dir.path()), InputError);
  testing::TempDir empty("empty");
  EXPECT_THROW(Checkpoint c(empty.path()), InputError);
}

}  // namespace
}  // namespace plexus

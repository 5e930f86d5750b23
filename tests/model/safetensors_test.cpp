// safetensors header validation: every malformed header gets an InputError naming the file
// and the tensor, never a crash.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

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

// Resident bytes of this process's mapping that starts at `p`, from /proc/self/smaps.
std::int64_t resident_bytes_of_mapping(const void* p) {
  char start[32];
  std::snprintf(start, sizeof start, "%lx-", reinterpret_cast<unsigned long>(p));
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  while (std::getline(smaps, line)) {
    if (line.rfind(start, 0) == 0) in = true;
    if (in && line.rfind("Rss:", 0) == 0) {
      std::istringstream kb(line.substr(4));
      std::int64_t n = 0;
      kb >> n;
      return n * 1024;
    }
  }
  return -1;
}

TEST(Safetensors, PrefaultMapsEveryPageIn) {
  // A 3 MiB tensor: after prefault() every page of the file is resident in this mapping, so
  // reading the weights takes no page faults; the bytes read back unchanged.
  testing::TempDir dir("prefault");
  const std::string path = dir / "model.safetensors";
  const std::size_t data = 3u << 20;
  {
    std::ofstream f(path, std::ios::binary);
    f << file_bytes(R"({"w":{"dtype":"U8","shape":[3145728],"data_offsets":[0,3145728]}})", data);
  }
  const SafetensorsFile file(path);
  const TensorInfo* w = file.find("w");
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(file.prefault());
  const auto* bytes = static_cast<const std::uint8_t*>(file.data(*w));
  const void* map_start = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(bytes) & ~std::uintptr_t{4095});
  EXPECT_GE(resident_bytes_of_mapping(map_start), static_cast<std::int64_t>(data));
  for (std::size_t i = 0; i < data; i += 4093) ASSERT_EQ(bytes[i], 1) << i;
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

// The GGUF writer: what it writes reads back through GgufFile (metadata of every type, tensor
// table, aligned data), keys in insertion order, and nothing at the path when writing stops.
#include "core/gguf_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "core/gguf_file.h"

namespace plexus {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& tag) {
  const fs::path d = fs::path(::testing::TempDir()) / ("plexus-gguf-writer-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A writer with one value of every type and three tensors: f32 (5), q8_0 (32 x 2: 2 blocks of 34
// bytes), f16 (3 x 1); the data bytes are a pattern per tensor.
GgufWriter sample_writer() {
  GgufWriter w(32);
  w.add("general.architecture", gguf_string("llama"));
  w.add("u8", gguf_int(GgufType::kU8, 200));
  w.add("i8", gguf_int(GgufType::kI8, -100));
  w.add("u16", gguf_int(GgufType::kU16, 60000));
  w.add("i16", gguf_int(GgufType::kI16, -30000));
  w.add("u32", gguf_u32(4000000000u));
  w.add("i32", gguf_i32(-2000000000));
  w.add("u64", gguf_u64(1ull << 40));
  w.add("i64", gguf_int(GgufType::kI64, -(1ll << 40)));
  w.add("f32", gguf_f32(0.25f));
  w.add("bool", gguf_bool(true));
  w.add("strings", gguf_string_array({"a", "", "<s>"}));
  w.add("ints", gguf_int_array(GgufType::kI32, {1, -2, 3}));
  w.add("floats", gguf_f32_array({-1.5f, 2.0f}));
  const auto pattern = [](std::uint64_t n, int salt) {
    return [n, salt](void* dst) {
      for (std::uint64_t i = 0; i < n; ++i) static_cast<std::uint8_t*>(dst)[i] = static_cast<std::uint8_t>(i * 7 + salt);
    };
  };
  w.add_tensor("norm.weight", {5}, 0, 20, pattern(20, 1));
  w.add_tensor("blk.0.attn_q.weight", {32, 2}, 8, 68, pattern(68, 2));
  w.add_tensor("odd.weight", {3, 1}, 1, 6, pattern(6, 3));
  return w;
}

TEST(GgufWriter, ReadsBackThroughGgufFile) {
  const std::string dir = fresh_dir("roundtrip");
  const std::string path = dir + "/m.gguf";
  const GgufWriter w = sample_writer();
  w.write(path);
  EXPECT_EQ(fs::file_size(path), w.file_size());
  const GgufFile f(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.require_string("general.architecture"), "llama");
  const std::pair<const char*, std::int64_t> ints[] = {{"u8", 200}, {"i8", -100}, {"u16", 60000}, {"i16", -30000},
                                                       {"u32", 4000000000ll}, {"i32", -2000000000}, {"u64", 1ll << 40},
                                                       {"i64", -(1ll << 40)}};
  const std::uint32_t codes[] = {0, 1, 2, 3, 4, 5, 10, 11};
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(f.require_int(ints[i].first), ints[i].second) << ints[i].first;
    EXPECT_EQ(f.find(ints[i].first)->gguf_type, codes[i]) << ints[i].first;
  }
  EXPECT_EQ(f.get_float("f32"), 0.25);
  EXPECT_EQ(f.get_bool("bool"), true);
  const GgufValue* s = f.find("strings");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->arr.size(), 3u);
  EXPECT_EQ(s->elem_type, 8u);
  EXPECT_EQ(s->arr[0].s, "a");
  EXPECT_EQ(s->arr[1].s, "");
  EXPECT_EQ(s->arr[2].s, "<s>");
  const GgufValue* is = f.find("ints");
  ASSERT_NE(is, nullptr);
  EXPECT_EQ(is->elem_type, 5u);
  ASSERT_EQ(is->arr.size(), 3u);
  EXPECT_EQ(is->arr[1].i, -2);
  const GgufValue* floats = f.find("floats");
  ASSERT_NE(floats, nullptr);
  EXPECT_EQ(floats->elem_type, 6u);
  ASSERT_EQ(floats->arr.size(), 2u);
  EXPECT_EQ(floats->arr[0].f, -1.5);

  ASSERT_EQ(f.tensors().size(), 3u);
  const GgufTensor* q = f.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dims, (std::vector<std::int64_t>{32, 2}));
  EXPECT_EQ(q->ggml_type, 8u);
  EXPECT_EQ(q->dtype, DType::kQ8_0);
  EXPECT_EQ(q->offset, 32u);  // the 20-byte f32 tensor padded to 32
  EXPECT_EQ(f.data_start() % 32, 0u);
  const GgufTensor* odd = f.find_tensor("odd.weight");
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->offset, 128u);  // 32 + 68 = 100, aligned up to 128
  EXPECT_EQ(odd->dtype, DType::kF16);
  int salt = 1;
  for (const char* name : {"norm.weight", "blk.0.attn_q.weight", "odd.weight"}) {
    const GgufTensor* t = f.find_tensor(name);
    ASSERT_NE(t, nullptr);
    const auto* d = static_cast<const std::uint8_t*>(f.data(*t));
    for (std::uint64_t i = 0; i < t->bytes; ++i) ASSERT_EQ(d[i], static_cast<std::uint8_t>(i * 7 + salt)) << name << " byte " << i;
    ++salt;
  }
}

// An MXFP4 tensor (ggml type 39: 17-byte blocks of 32) of 3 rows of 3 blocks: 153 bytes, odd, so
// the tensor after it starts at the next multiple of 32; both read back byte for byte.
TEST(GgufWriter, Mxfp4TensorsRoundTrip) {
  const std::string path = fresh_dir("mxfp4") + "/m.gguf";
  GgufWriter w(32);
  w.add("general.architecture", gguf_string("gpt-oss"));
  ASSERT_EQ(ggml_type_of(DType::kMXFP4), 39u);
  const std::uint64_t bytes = static_cast<std::uint64_t>(3 * dtype_row_bytes(DType::kMXFP4, 96));
  ASSERT_EQ(bytes, 153u);
  const auto fill = [](std::uint64_t n, int salt) {
    return [n, salt](void* dst) {
      for (std::uint64_t i = 0; i < n; ++i) static_cast<std::uint8_t*>(dst)[i] = static_cast<std::uint8_t>(i * 13 + salt);
    };
  };
  w.add_tensor("blk.0.ffn_down_exps.weight", {96, 3}, 39, bytes, fill(bytes, 5));
  w.add_tensor("blk.0.ffn_norm.weight", {4}, 0, 16, fill(16, 9));
  w.write(path);
  const GgufFile f(path);
  const GgufTensor* t = f.find_tensor("blk.0.ffn_down_exps.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->supported);
  EXPECT_EQ(t->dtype, DType::kMXFP4);
  EXPECT_EQ(t->ggml_type, 39u);
  EXPECT_EQ(ggml_type_name(t->ggml_type), "MXFP4");
  EXPECT_EQ(t->dims, (std::vector<std::int64_t>{96, 3}));
  EXPECT_EQ(t->bytes, bytes);
  const GgufTensor* norm = f.find_tensor("blk.0.ffn_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->offset, 160u);
  int salt = 5;
  for (const GgufTensor* x : {t, norm}) {
    const auto* d = static_cast<const std::uint8_t*>(f.data(*x));
    for (std::uint64_t i = 0; i < x->bytes; ++i) ASSERT_EQ(d[i], static_cast<std::uint8_t>(i * 13 + salt)) << x->name << " byte " << i;
    salt = 9;
  }
}

TEST(GgufWriter, WritesKeysInInsertionOrder) {
  const std::string dir = fresh_dir("order");
  GgufWriter w;
  w.add("zeta", gguf_u32(1));
  w.add("alpha", gguf_u32(2));
  w.write(dir + "/o.gguf");
  const std::string bytes = slurp(dir + "/o.gguf");
  // magic, version, tensor count, kv count (24 bytes), then the first key: length + text.
  ASSERT_GT(bytes.size(), 40u);
  EXPECT_EQ(bytes.substr(0, 4), "GGUF");
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data() + 16, 8);
  EXPECT_EQ(n, 2u);
  std::memcpy(&n, bytes.data() + 24, 8);
  ASSERT_EQ(n, 4u);
  EXPECT_EQ(bytes.substr(32, 4), "zeta");
  EXPECT_LT(bytes.find("zeta"), bytes.find("alpha"));
}

TEST(GgufWriter, LeavesNothingWhenStoppedOrFailing) {
  const std::string dir = fresh_dir("stop");
  const std::string path = dir + "/s.gguf";
  GgufWriter w = sample_writer();
  EXPECT_THROW(w.write(path, [](std::size_t i, const std::string&) {
                 if (i == 2) throw Interrupted("stop");
               }),
               Interrupted);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir)) << "a temporary file was left";

  GgufWriter failing;
  failing.add_tensor("t", {4}, 0, 16, [](void*) { throw std::runtime_error("source unreadable"); });
  EXPECT_THROW(failing.write(path), std::runtime_error);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir));

  EXPECT_THROW(GgufWriter().write(dir + "/no/such/dir/x.gguf"), RuntimeError);
}

TEST(GgufWriter, RefusesDuplicatesAndBadValues) {
  GgufWriter w;
  w.add("k", gguf_u32(1));
  EXPECT_THROW(w.add("k", gguf_u32(2)), InputError);
  w.add_tensor("t", {4}, 0, 16, [](void*) {});
  EXPECT_THROW(w.add_tensor("t", {4}, 0, 16, [](void*) {}), InputError);
  EXPECT_THROW(w.add_tensor("u", {}, 0, 0, [](void*) {}), InputError);
  EXPECT_THROW(w.add_tensor("u", {0, 3}, 0, 0, [](void*) {}), InputError);
  GgufValue bad = gguf_u32(1);
  bad.gguf_type = 42;
  EXPECT_THROW(w.add("bad", bad), InputError);
  GgufValue mismatched = gguf_string("x");
  mismatched.gguf_type = 4;
  EXPECT_THROW(w.add("mismatched", mismatched), InputError);
  EXPECT_THROW(w.add("general.alignment", gguf_u32(64)), InputError);
  EXPECT_THROW(GgufWriter(48), InputError);
}

}  // namespace
}  // namespace plexus

// GGUF reader: hand-built files (every field, every malformation, every truncation) and the golden
// files made by llama.cpp's own tools.
#include "core/gguf_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"

namespace plexus {
namespace {

// Little-endian GGUF byte builder.
struct Bytes {
  std::vector<std::uint8_t> b;
  template <typename T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<std::uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& pad_to(std::size_t alignment) {
    while (b.size() % alignment) b.push_back(0);
    return *this;
  }
};

struct TensorSpec {
  std::string name;
  std::vector<std::uint64_t> dims;
  std::uint32_t type;
  std::uint64_t offset;
};

// A small valid file: a few key/values of every type and two tensors (F32 (4, 2); Q8_0 (32, 2)).
Bytes header(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3) {
  Bytes b;
  b.put<std::uint32_t>(0x46554747).put<std::uint32_t>(version).put<std::uint64_t>(n_tensors).put<std::uint64_t>(n_kv);
  return b;
}

void tensor_info(Bytes& b, const TensorSpec& t) {
  b.str(t.name).put<std::uint32_t>(static_cast<std::uint32_t>(t.dims.size()));
  for (auto d : t.dims) b.put<std::uint64_t>(d);
  b.put<std::uint32_t>(t.type).put<std::uint64_t>(t.offset);
}

std::vector<std::uint8_t> good_file() {
  Bytes b = header(2, 6);
  b.str("general.architecture").put<std::uint32_t>(8).str("llama");
  b.str("llama.block_count").put<std::uint32_t>(4).put<std::uint32_t>(2);
  b.str("llama.rope.freq_base").put<std::uint32_t>(6).put<float>(10000.0f);
  b.str("flag").put<std::uint32_t>(7).put<std::uint8_t>(1);
  b.str("tokenizer.ggml.tokens").put<std::uint32_t>(9).put<std::uint32_t>(8).put<std::uint64_t>(3).str("a").str("bc").str("");
  b.str("nested").put<std::uint32_t>(9).put<std::uint32_t>(9).put<std::uint64_t>(1).put<std::uint32_t>(11).put<std::uint64_t>(2)
      .put<std::int64_t>(-5).put<std::int64_t>(7);
  tensor_info(b, {"a.weight", {4, 2}, 0, 0});
  tensor_info(b, {"b.weight", {32, 2}, 8, 32});
  b.pad_to(32);
  for (int k = 0; k < 8; ++k) b.put<float>(static_cast<float>(k));
  b.pad_to(32);
  for (int k = 0; k < 68; ++k) b.put<std::uint8_t>(static_cast<std::uint8_t>(k));
  return b.b;
}

std::string error_of(std::vector<std::uint8_t> bytes) {
  try {
    GgufFile f("t.gguf", std::move(bytes));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(GgufFile, ReadsEveryValueTypeAndTensor) {
  GgufFile f("t.gguf", good_file());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.require_string("general.architecture"), "llama");
  EXPECT_EQ(f.require_int("llama.block_count"), 2);
  EXPECT_DOUBLE_EQ(*f.get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_DOUBLE_EQ(*f.get_float("llama.block_count"), 2.0);  // ints read as floats too
  EXPECT_EQ(f.get_bool("flag"), true);
  EXPECT_EQ(f.array_length("tokenizer.ggml.tokens"), 3u);
  EXPECT_EQ(f.find("tokenizer.ggml.tokens")->arr[1].s, "bc");
  const GgufValue* nested = f.find("nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->arr.size(), 1u);
  EXPECT_EQ(nested->arr[0].arr[0].i, -5);
  EXPECT_EQ(nested->arr[0].arr[1].i, 7);
  EXPECT_FALSE(f.get_int("absent").has_value());
  EXPECT_THROW(f.get_int("general.architecture"), InputError);
  EXPECT_THROW(f.require_int("absent"), InputError);
  EXPECT_FALSE(gguf_chat_template(f).has_value());

  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensor* a = f.find_tensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dims, (std::vector<std::int64_t>{4, 2}));
  EXPECT_TRUE(a->supported);
  EXPECT_EQ(a->dtype, DType::kF32);
  EXPECT_EQ(a->bytes, 32u);
  EXPECT_EQ(a->numel(), 8);
  const auto* av = static_cast<const float*>(f.data(*a));
  EXPECT_EQ(av[5], 5.0f);
  const GgufTensor* b = f.find_tensor("b.weight");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kQ8_0);
  EXPECT_EQ(b->bytes, 68u);
  EXPECT_EQ(f.data_start() % 32, 0u);
  EXPECT_EQ(static_cast<const std::uint8_t*>(f.data(*b))[3], 3);
  EXPECT_EQ(f.find_tensor("c.weight"), nullptr);
}

TEST(GgufFile, EveryTruncationIsAnInputErrorWithTheOffset) {
  const auto full = good_file();
  for (std::size_t n = 0; n < full.size(); ++n) {
    std::vector<std::uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string e = error_of(cut);
    EXPECT_NE(e, "") << "truncated to " << n << " bytes parsed";
    EXPECT_NE(e.find("t.gguf: offset "), std::string::npos) << e;
  }
}

TEST(GgufFile, EveryByteFlipIsAcceptedOrAnInputError) {
  // No crash, no other exception, whatever byte is corrupted.
  const auto full = good_file();
  for (std::size_t n = 0; n < full.size(); ++n) {
    for (std::uint8_t x : {0x01, 0x80, 0xff}) {
      auto bad = full;
      bad[n] ^= x;
      try {
        GgufFile f("t.gguf", bad);
      } catch (const InputError&) {
      }
    }
  }
}

TEST(GgufFile, NamesTheFieldOfEachMalformation) {
  {
    auto b = good_file();
    b[0] = 'X';
    EXPECT_NE(error_of(b).find("offset 0: magic"), std::string::npos);
  }
  EXPECT_NE(error_of(header(0, 0, 1).b).find("offset 4: version: version 1 is not supported"), std::string::npos);
  EXPECT_NE(error_of(header(0, 0, 0x03000000).b).find("big-endian"), std::string::npos);
  EXPECT_EQ(error_of(header(0, 0, 2).b), "");  // v2 reads the same
  EXPECT_NE(error_of(header(0, 1000).b).find("offset 16: kv_count"), std::string::npos);
  EXPECT_NE(error_of(header(1u << 30, 0).b).find("offset 8: tensor_count"), std::string::npos);
  {
    Bytes b = header(0, 1);
    b.str("k").put<std::uint32_t>(13).put<std::uint64_t>(0);
    EXPECT_NE(error_of(b.b).find("offset 33: key 'k': unknown value type 13"), std::string::npos) << error_of(b.b);
  }
  {
    Bytes b = header(0, 1);
    b.put<std::uint64_t>(1ull << 40).put<std::uint64_t>(0);
    EXPECT_NE(error_of(b.b).find("key/value #0 key: string length"), std::string::npos) << error_of(b.b);
  }
  {
    Bytes b = header(0, 2);
    b.str("k").put<std::uint32_t>(0).put<std::uint8_t>(1);
    b.str("k").put<std::uint32_t>(0).put<std::uint8_t>(1);
    EXPECT_NE(error_of(b.b).find("duplicate key 'k'"), std::string::npos);
  }
  {
    Bytes b = header(0, 1);
    b.str("k").put<std::uint32_t>(9).put<std::uint32_t>(4).put<std::uint64_t>(1ull << 60);
    EXPECT_NE(error_of(b.b).find("key 'k' count: 1152921504606846976 uint32 elements cannot fit"), std::string::npos) << error_of(b.b);
  }
  {
    Bytes b = header(0, 1);
    b.str("k").put<std::uint32_t>(9);
    for (int d = 0; d < 20; ++d) b.put<std::uint32_t>(9).put<std::uint64_t>(1);
    b.put<std::uint32_t>(0).put<std::uint64_t>(0);
    EXPECT_NE(error_of(b.b).find("nested deeper"), std::string::npos) << error_of(b.b);
  }
  {
    Bytes b = header(0, 1);
    b.str("k").put<std::uint32_t>(10).put<std::uint64_t>(~0ull);
    EXPECT_NE(error_of(b.b).find("above 2^63-1"), std::string::npos);
  }
  {
    Bytes b = header(0, 1);
    b.str("k").put<std::uint32_t>(7).put<std::uint8_t>(2);
    EXPECT_NE(error_of(b.b).find("bool value 2"), std::string::npos);
  }
  {
    Bytes b = header(0, 1);
    b.str("general.alignment").put<std::uint32_t>(4).put<std::uint32_t>(24);
    EXPECT_NE(error_of(b.b).find("power-of-two"), std::string::npos);
  }
  auto with_tensors = [](const std::vector<TensorSpec>& ts, std::size_t data_bytes) {
    Bytes b = header(ts.size(), 0);
    for (const auto& t : ts) tensor_info(b, t);
    b.pad_to(32);
    b.b.resize(b.b.size() + data_bytes);
    return error_of(b.b);
  };
  EXPECT_EQ(with_tensors({{"a", {4, 2}, 0, 0}}, 32), "");
  EXPECT_NE(with_tensors({{"a", {4, 2}, 0, 0}}, 31).find("tensor 'a' data: 32 bytes at data offset 0 run past the end"), std::string::npos);
  EXPECT_NE(with_tensors({{"a", {4, 2, 1, 1, 1}, 0, 0}}, 32).find("tensor 'a' n_dims: 5 dimensions"), std::string::npos);
  EXPECT_NE(with_tensors({{"a", {0}, 0, 0}}, 32).find("dims[0]: dimension 0"), std::string::npos);
  EXPECT_NE(with_tensors({{"a", {1ull << 32, 1ull << 32}, 0, 0}}, 32).find("dims[1]: the element count overflows"), std::string::npos);
  EXPECT_NE(with_tensors({{"a", {16, 2}, 8, 0}}, 64).find("Q8_0 needs dims[0] (16) to be a multiple of its block of 32"), std::string::npos);
  EXPECT_NE(with_tensors({{"a", {4}, 99, 0}}, 32).find("unknown ggml type code 99"), std::string::npos);
  EXPECT_NE(with_tensors({{"a", {4}, 0, 8}}, 32).find("is not a multiple of the alignment 32"), std::string::npos);
  EXPECT_NE(with_tensors({{"a", {16}, 0, 0}, {"b", {4}, 0, 32}}, 64).find("tensor 'b' offset: its data at 32 overlaps tensor 'a'"),
            std::string::npos);
  EXPECT_NE(with_tensors({{"a", {4}, 0, 0}, {"a", {4}, 0, 32}}, 64).find("duplicate tensor name"), std::string::npos);
  // A type plexus cannot run still validates; it is marked unsupported.
  {
    Bytes b = header(1, 0);
    tensor_info(b, {"q", {256}, 16, 0});  // IQ2_XXS: 66 bytes a block
    b.pad_to(32);
    b.b.resize(b.b.size() + 66);
    GgufFile f("t.gguf", b.b);
    EXPECT_FALSE(f.tensors()[0].supported);
    EXPECT_EQ(f.tensors()[0].bytes, 66u);
    EXPECT_EQ(ggml_type_name(f.tensors()[0].ggml_type), "IQ2_XXS");
  }
}

// Every block format plexus reads: sized from its block (3 rows of 2 blocks), read as its DType;
// one byte short of its blocks or a row that is no whole number of blocks is an InputError with
// the byte offset (the file's type table agrees with dtype_block_bytes / dtype_block_elems).
TEST(GgufFile, EveryBlockFormatIsSizedByItsBlocks) {
  for (DType t : kBlockFormats) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const std::uint64_t elems = static_cast<std::uint64_t>(dtype_block_elems(t));
    const std::size_t bytes = static_cast<std::size_t>(6 * dtype_block_bytes(t));
    auto file = [&](std::uint64_t cols, std::size_t data_bytes) {
      Bytes b = header(1, 0);
      tensor_info(b, {"w", {cols, 3}, ggml_type_of(t), 0});
      b.pad_to(32);
      b.b.resize(b.b.size() + data_bytes);
      return b.b;
    };
    GgufFile f("t.gguf", file(2 * elems, bytes));
    ASSERT_TRUE(f.tensors()[0].supported);
    EXPECT_EQ(f.tensors()[0].dtype, t);
    EXPECT_EQ(f.tensors()[0].bytes, bytes);
    EXPECT_NE(error_of(file(2 * elems, bytes - 1)).find("offset 24: tensor 'w' data: " + std::to_string(bytes) + " bytes at data offset 0 run past the end"),
              std::string::npos)
        << error_of(file(2 * elems, bytes - 1));
    const std::string odd = error_of(file(elems + 16, bytes));
    EXPECT_NE(odd.find(std::string(dtype_name(t)) + " needs dims[0] (" + std::to_string(elems + 16) + ") to be a multiple of its block of " +
                       std::to_string(elems)),
              std::string::npos)
        << odd;
    EXPECT_NE(odd.find("t.gguf: offset "), std::string::npos) << odd;
  }
}

TEST(GgufFile, GgmlTypeCodesRoundTrip) {
  std::vector<DType> all{DType::kF32, DType::kF16, DType::kBF16};
  all.insert(all.end(), std::begin(kBlockFormats), std::end(kBlockFormats));
  for (DType t : all) {
    DType back = DType::kF32;
    ASSERT_TRUE(dtype_of_ggml_type(ggml_type_of(t), &back));
    EXPECT_EQ(back, t);
    EXPECT_EQ(ggml_type_name(ggml_type_of(t)), dtype_name(t));
  }
  DType out;
  EXPECT_FALSE(dtype_of_ggml_type(16, &out));  // IQ2_XXS: read-only types needing a grid table
  EXPECT_EQ(ggml_type_name(1000), "type 1000");
}

std::string golden(const std::string& name) { return std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf/" + name; }

TEST(GgufFile, ReadsTheGoldenFilesLlamaCppWrote) {
  for (const char* name : {"gs-llama-q8_0.gguf", "gs-llama-q4_0.gguf", "gs-llama-q4_k_m.gguf"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(GgufFile::is_gguf(golden(name)));
    GgufFile f(golden(name));
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.require_string("general.architecture"), "llama");
    EXPECT_EQ(f.require_int("llama.embedding_length"), 256);
    EXPECT_EQ(f.require_int("llama.block_count"), 2);
    EXPECT_EQ(f.array_length("tokenizer.ggml.tokens"), 2048u);
    const GgufTensor* q = f.find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->dims, (std::vector<std::int64_t>{256, 256}));
    EXPECT_TRUE(q->supported);
    EXPECT_TRUE(dtype_is_block(q->dtype));
    const GgufTensor* norm = f.find_tensor("output_norm.weight");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->dtype, DType::kF32);
    const GgufTensor* embd = f.find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->dims, (std::vector<std::int64_t>{256, 2048}));
    EXPECT_EQ(f.tensors().size(), 2u * 9u + 3u);
  }
  EXPECT_FALSE(GgufFile::is_gguf(golden("cases.jsonl")));
  EXPECT_FALSE(GgufFile::is_gguf(golden("absent.gguf")));
}

}  // namespace
}  // namespace plexus

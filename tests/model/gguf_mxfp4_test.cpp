// A GGUF model whose matrices are MXFP4 (ggml type 39) runs as stored: the llama golden file's
// matrices (token embedding, projections, output) quantised to MXFP4 give, in process and through
// the plexus binary, the NLLs of the same model with those matrices as f32 holding exactly their
// MXFP4 values (the f32 kernels: no MXFP4 code), within the 8-bit activations' error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <list>
#include <vector>

#include "core/gguf_file.h"
#include "core/gguf_writer.h"
#include "core/json.h"
#include "kernels/quantize.h"
#include "kernels/ref/dequantize.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

// Writes SRC with every matrix of whole 32-blocks as MXFP4 to `mxfp4`, and with those matrices as
// the f32 values of their MXFP4 blocks to `twin`; returns how many matrices it converted.
int write_mxfp4_and_twin(const GgufFile& src, const std::string& mxfp4, const std::string& twin) {
  GgufWriter mx(32), tw(32);
  for (const auto& [key, value] : src.metadata()) {
    mx.add(key, value);
    tw.add(key, value);
  }
  std::list<std::vector<std::uint8_t>> keep;  // the tensors' bytes until written (stable addresses)
  int converted = 0;
  for (const GgufTensor& t : src.tensors()) {
    const auto* data = static_cast<const std::uint8_t*>(src.data(t));
    if (t.dims.size() != 2 || t.dims[0] % 32 != 0) {
      const std::uint8_t* end = data + t.bytes;
      const auto& copy = keep.emplace_back(data, end);
      const auto fill = [&copy](void* dst) { std::copy(copy.begin(), copy.end(), static_cast<std::uint8_t*>(dst)); };
      mx.add_tensor(t.name, t.dims, t.ggml_type, t.bytes, fill);
      tw.add_tensor(t.name, t.dims, t.ggml_type, t.bytes, fill);
      continue;
    }
    const std::int64_t cols = t.dims[0], rows = t.dims[1];
    std::vector<float> row(static_cast<std::size_t>(cols));
    auto& q = keep.emplace_back(static_cast<std::size_t>(rows * dtype_row_bytes(DType::kMXFP4, cols)));
    auto& f = keep.emplace_back(static_cast<std::size_t>(rows * cols * 4));
    const std::int64_t src_row = dtype_row_bytes(t.dtype, cols), q_row = dtype_row_bytes(DType::kMXFP4, cols);
    for (std::int64_t r = 0; r < rows; ++r) {
      if (dtype_is_block(t.dtype)) {
        dequantize_row(t.dtype, data + r * src_row, row.data(), cols);
      } else {
        EXPECT_EQ(t.dtype, DType::kF32) << t.name;
        std::memcpy(row.data(), data + r * src_row, static_cast<std::size_t>(cols) * 4);
      }
      quantize_row(DType::kMXFP4, row.data(), q.data() + r * q_row, cols);
      dequantize_row(DType::kMXFP4, q.data() + r * q_row, reinterpret_cast<float*>(f.data()) + r * cols, cols);
    }
    mx.add_tensor(t.name, t.dims, ggml_type_of(DType::kMXFP4), q.size(),
                  [&q](void* dst) { std::copy(q.begin(), q.end(), static_cast<std::uint8_t*>(dst)); });
    tw.add_tensor(t.name, t.dims, ggml_type_of(DType::kF32), f.size(),
                  [&f](void* dst) { std::copy(f.begin(), f.end(), static_cast<std::uint8_t*>(dst)); });
    ++converted;
  }
  mx.write(mxfp4);
  tw.write(twin);
  return converted;
}

TEST(GgufMxfp4, MatricesInMxfp4RunAsStored) {
  const GgufFile src(std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf/gs-llama-q8_0.gguf");
  testing::TempDir dir("gguf_mxfp4");
  const std::string mxfp4 = dir / "mxfp4.gguf", twin = dir / "twin.gguf";
  EXPECT_EQ(write_mxfp4_and_twin(src, mxfp4, twin), 2 * 7 + 2);  // 7 a layer, the embedding and the output
  const GgufFile written(mxfp4);
  for (const GgufTensor& t : written.tensors()) {
    if (t.dims.size() == 2) {
      EXPECT_EQ(t.dtype, DType::kMXFP4) << t.name;
    }
  }
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back((i * 733 + 11) % 2048);
  Engine mx_engine(mxfp4, EngineOptions{});
  Engine twin_engine(twin, EngineOptions{});
  const PerplexityResult got = perplexity(mx_engine, ids), want = perplexity(twin_engine, ids);
  ASSERT_EQ(got.nll.size(), want.nll.size());
  double sum = 0, worst = 0;
  for (std::size_t i = 0; i < want.nll.size(); ++i) {
    const double d = std::abs(got.nll[i] - want.nll[i]);
    EXPECT_LE(d, 0.12) << "token " << i;
    sum += d;
    worst = std::max(worst, d);
  }
  EXPECT_LE(sum / static_cast<double>(want.nll.size()), 0.03);
  std::printf("MXFP4 vs its f32 twin: mean |nll diff| %.2e, max %.2e\n", sum / static_cast<double>(want.nll.size()), worst);
  // The binary on the same file: the in-process NLLs.
  const testing::ProcessResult r =
      testing::run_plexus("perplexity " + testing::shell_quote(mxfp4) + " --ids " + testing::ids_csv(ids) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto nll = Json::parse(r.out)["nll"].get<std::vector<double>>();
  ASSERT_EQ(nll.size(), got.nll.size());
  for (std::size_t i = 0; i < nll.size(); ++i) EXPECT_NEAR(nll[i], got.nll[i], 1e-4) << "token " << i;
}

}  // namespace
}  // namespace plexus

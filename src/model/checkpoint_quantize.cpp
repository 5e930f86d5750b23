// Quantise on load: the weight matrices of a Checkpoint become owned copies in the types a named
// mix gives them, quantised row by row on a thread pool; and a GGUF file's codebook-type tensors
// become Q8_0 copies at open.
#include <cstdlib>
#include <new>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/isa.h"
#include "kernels/quantize.h"
#include "kernels/ref/dequantize_iq.h"
#include "model/checkpoint.h"
#include "model/checkpoint_owned.h"

namespace plexus {

namespace {

constexpr std::int64_t kChunkElems = std::int64_t{4} << 20;  // work between progress calls

std::uint8_t* allocate_aligned(std::int64_t bytes) {
  const std::size_t n = (static_cast<std::size_t>(bytes) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, n == 0 ? 64 : n);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<std::uint8_t*>(p);
}

// out (cols) = row r (one output feature) of a matrix stored (in, out) (TensorRef::in_out_ld):
// element c of it is element r of stored row c.
void gather_in_out_row(const TensorRef& src, std::int64_t r, float* out) {
  const std::int64_t cols = src.info->shape[1];
  const std::size_t es = dtype_size(src.info->dtype);
  const auto* from = static_cast<const std::uint8_t*>(src.data) + static_cast<std::size_t>(r) * es;
  for (std::int64_t c = 0; c < cols; ++c) {
    generic_kernels().to_f32(src.info->dtype, from + static_cast<std::size_t>(c * src.in_out_ld) * es, out + c, 1);
  }
}

}  // namespace

void Checkpoint::quantize(QuantMix mix, const QuantModelFacts& facts, ThreadPool& pool, const QuantizeProgress& progress) {
  // Check every tensor the mix changes first: a bad one fails before any work is done.
  std::vector<std::pair<std::string, DType>> targets;
  std::int64_t total = 0;
  for (const auto& [name, ref] : index_) {
    const TensorInfo& info = *ref.info;
    if (info.shape.size() != 2) continue;
    const std::optional<DType> type = quant_mix_type(mix, name, info.shape, facts);
    if (!type || (info.dtype_supported && info.dtype == *type)) continue;
    if (dtype_is_block(info.dtype)) {
      throw InputError(dir_ + ": tensor '" + name + "' is already quantised (" +
                       std::string(dtype_name(info.dtype)) +
                       "); --quantize converts f32/bf16/f16 checkpoints: run the file as stored, without --quantize");
    }
    if (!info.dtype_supported) {
      throw InputError(dir_ + ": tensor '" + name + "' (" + info.dtype_name + ") cannot be quantised: expected an f32/bf16/f16 matrix");
    }
    targets.emplace_back(name, *type);
    total += info.numel();
  }
  const IsaKernels& k = generic_kernels();
  std::int64_t done = 0;
  if (progress && !progress(0, total)) throw Interrupted("quantisation interrupted");
  for (const auto& target : targets) {
    const std::string& name = target.first;
    const DType type = target.second;  // a plain variable: lambdas below capture it
    const TensorRef src = index_.at(name);
    const std::int64_t rows = src.info->shape[0], cols = src.info->shape[1];
    const std::int64_t row_bytes = dtype_row_bytes(type, cols);
    const std::size_t src_row_bytes = static_cast<std::size_t>(cols) * dtype_size(src.info->dtype);
    auto owned = std::make_shared<OwnedTensor>();
    owned->info = *src.info;
    owned->info.dtype = type;
    owned->info.dtype_name = std::string(dtype_name(type));
    owned->info.begin = 0;
    owned->info.end = static_cast<std::uint64_t>(rows * row_bytes);
    owned->bytes.reset(allocate_aligned(rows * row_bytes));
    std::uint8_t* dst = owned->bytes.get();
    const auto* from = static_cast<const std::uint8_t*>(src.data);
    const std::int64_t rows_per_chunk = std::max<std::int64_t>(1, kChunkElems / cols);
    for (std::int64_t r0 = 0; r0 < rows; r0 += rows_per_chunk) {
      const std::int64_t r1 = std::min(rows, r0 + rows_per_chunk);
      pool.parallel_for(r1 - r0, 1, [&](std::int64_t b, std::int64_t e) {
        std::vector<float> row(static_cast<std::size_t>(cols));  // (cols)
        for (std::int64_t r = r0 + b; r < r0 + e; ++r) {
          if (src.in_out_ld != 0) {
            gather_in_out_row(src, r, row.data());  // stored (in, out): output r is a column
          } else {
            k.to_f32(src.info->dtype, from + static_cast<std::size_t>(r) * src_row_bytes, row.data(), cols);
          }
          quantize_row(type, row.data(), dst + r * row_bytes, cols);  // a block format, or F16
        }
      });
      done += (r1 - r0) * cols;
      if (progress && !progress(done, total)) throw Interrupted("quantisation interrupted");
    }
    TensorRef quantised = src;  // the same file named in messages
    quantised.info = &owned->info;
    quantised.data = owned->bytes.get();
    quantised.in_out_ld = 0;  // new data, (out, in) rows of blocks whatever the source's layout
    index_[name] = quantised;
    owned_[name] = std::move(owned);
    quantized_ = true;
  }
}

void Checkpoint::convert_codebook_tensors(const std::vector<std::pair<std::string, std::uint32_t>>& targets) {
  if (targets.empty()) return;
  ThreadPool pool(0, WaitPolicy::kPassive);
  for (const auto& [name, ggml_type] : targets) {
    IqType iq;
    iq_type_of_code(ggml_type, &iq);
    const TensorRef src = index_.at(name);
    const std::int64_t cols = src.info->shape.back(), rows = src.info->numel() / cols;  // GgufFile: whole blocks per row
    const std::int64_t src_row_bytes = cols / 256 * iq_block_bytes(iq);
    const std::int64_t row_bytes = dtype_row_bytes(DType::kQ8_0, cols);
    auto owned = std::make_shared<OwnedTensor>();
    owned->info = *src.info;
    owned->info.dtype = DType::kQ8_0;
    owned->info.dtype_supported = true;
    owned->info.dtype_name = std::string(dtype_name(DType::kQ8_0));
    owned->info.begin = 0;
    owned->info.end = static_cast<std::uint64_t>(rows * row_bytes);
    owned->bytes.reset(allocate_aligned(rows * row_bytes));
    std::uint8_t* dst = owned->bytes.get();
    const auto* from = static_cast<const std::uint8_t*>(src.data);
    const IqType type = iq;  // a plain variable: the lambda captures it
    pool.parallel_for(rows, 1, [&](std::int64_t b, std::int64_t e) {
      std::vector<float> row(static_cast<std::size_t>(cols));  // (cols)
      for (std::int64_t r = b; r < e; ++r) {
        dequantize_iq_row(type, from + r * src_row_bytes, row.data(), cols);
        quantize_row(DType::kQ8_0, row.data(), dst + r * row_bytes, cols);
      }
    });
    TensorRef converted = src;  // the same file named in messages
    converted.info = &owned->info;
    converted.data = owned->bytes.get();
    index_[name] = converted;
    owned_[name] = std::move(owned);
    converted_.emplace_back(name, ggml_type_name(ggml_type));
  }
}

}  // namespace plexus

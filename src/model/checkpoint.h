// A Hugging Face checkpoint on disk: one model.safetensors or shards listed by
// model.safetensors.index.json, or one GGUF file, all memory-mapped. Looks tensors up by their
// HF names (a GGUF file's tensors renamed, their shapes in HF order).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <deque>
#include <vector>

#include "core/gguf_file.h"
#include "model/quant_mix.h"
#include "model/safetensors.h"

namespace plexus {

class ThreadPool;

struct TensorRef {
  const TensorInfo* info = nullptr;
  const void* data = nullptr;     // in the mapped file
  const SafetensorsFile* file = nullptr;  // null for a GGUF checkpoint
  const GgufFile* gguf = nullptr;         // null for a safetensors checkpoint
  // 0: `data` holds info->shape row-major. Else the matrix, (out, in) by info->shape, is stored
  // transposed and read in place — GPT-2's Conv1D weights (checkpoint_gpt2.cpp): element (r, c)
  // is at data[c · in_out_ld + r] (WeightMatrix::in_out_ld), columns of a stored (in, in_out_ld)
  // matrix. Whoever reads `data` as bytes must honour it (quantize() transposes such a tensor).
  std::int64_t in_out_ld = 0;
  const std::string& path() const { return file ? file->path() : gguf->path(); }  // the file holding it
};

class Checkpoint {
 public:
  // Opens DIR/model.safetensors, or the shards named by DIR/model.safetensors.index.json, or
  // DIR itself when it is a GGUF file (tensors with no Hugging Face name, like rope_freqs.weight,
  // are left out). A GGUF file's tensors in llama.cpp's codebook types (IQ1_S, IQ1_M, IQ2_XXS,
  // IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S: kernels/ref/dequantize_iq.h), for which plexus has no kernels,
  // become owned Q8_0 copies here (checkpoint_quantize.cpp), so everything after sees Q8_0.
  // Throws InputError naming the file when something is missing or malformed.
  explicit Checkpoint(const std::string& dir);

  const std::string& dir() const { return dir_; }
  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  // Throws InputError naming the tensor and the checkpoint when absent.
  TensorRef get(const std::string& name) const;
  std::vector<std::string> names() const;
  // The safetensors files (none for a GGUF checkpoint).
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  const GgufFile* gguf() const { return gguf_.get(); }  // null for safetensors
  // Maps every file in now (MappedFile::prefault); returns whether all of them were.
  bool prefault() const;

  // Whether DIR holds a safetensors checkpoint (single file or index), or is a GGUF file.
  static bool exists_in(const std::string& dir);

  // Quantise on load (checkpoint_quantize.cpp): every weight matrix the named mix `mix` gives a
  // type (model/quant_mix.h: llama.cpp's rules for `facts`' model) is replaced by an owned copy in
  // that type (a block format, or F16 where no block divides its rows), converted row by row on
  // `pool`; get() then returns the copy, (out, in) rows also of a tensor stored (in, out)
  // (TensorRef::in_out_ld). Only the copies are allocated: the sources stay mapped.
  // Throws InputError when such a tensor is already in a block format (a GGUF file).
  // `progress(done, total)` (elements) is called on the calling thread every few million
  // elements; returning false stops the work with Interrupted.
  using QuantizeProgress = std::function<bool(std::int64_t done, std::int64_t total)>;
  void quantize(QuantMix mix, const QuantModelFacts& facts, ThreadPool& pool, const QuantizeProgress& progress = {});
  // Whether quantize() replaced any tensor.
  bool quantized() const { return quantized_; }
  // The tensors converted from codebook types at open, as (HF name, GGUF type name).
  const std::vector<std::pair<std::string, std::string>>& converted() const { return converted_; }

 private:
  struct OwnedTensor;
  // A safetensors checkpoint in GPT-2's names (checkpoint_gpt2.cpp): its tensors renamed to the
  // engine's, Conv1D weights (in, out) viewed in place as (out, in) matrices (TensorRef::in_out_ld),
  // c_attn split into q/k/v column thirds; the attention-mask buffers (attn.bias,
  // attn.masked_bias) dropped. TensorInfo::name stays the file's name (messages show both).
  // No-op otherwise.
  void adopt_gpt2_layout();
  std::deque<TensorInfo> renamed_infos_;  // GPT-2's views: c_attn bias thirds, Conv1D weights (TensorRef::info points here)
  // The GGUF file's codebook-type tensors, as (HF name, ggml type), become Q8_0 copies (the
  // constructor's last step; each expert of a stacked tensor on its own).
  void convert_codebook_tensors(const std::vector<std::pair<std::string, std::uint32_t>>& targets);
  // A vision-language checkpoint (Gemma3ForConditionalGeneration): its language model's tensors
  // under the names of a causal LM (language_model.model.* → model.*), the vision tower and
  // projector left out, with a note on stderr. Nothing for any other checkpoint.
  void select_language_model();
  std::map<std::string, std::shared_ptr<OwnedTensor>> owned_;  // quantised or converted copies by name
  bool quantized_ = false;
  std::vector<std::pair<std::string, std::string>> converted_;
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unique_ptr<GgufFile> gguf_;
  std::deque<TensorInfo> gguf_infos_;  // a GGUF file's tensors as HF entries (TensorRef::info points here)
  std::map<std::string, TensorRef> index_;
};

}  // namespace plexus

// HF checkpoint → GGUF (see gguf_export.h): metadata from config.json and the tokenizer files,
// tensors renamed and re-laid out as llama.cpp's converter lays them out, weight matrices
// quantised (the mix's type for each) row by row on a thread pool while the writer streams the file.
#include "model/gguf_export.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>

#include "core/error.h"
#include "core/gguf_file.h"
#include "core/thread_pool.h"
#include "kernels/quantize.h"
#include "model/checkpoint.h"
#include "model/gguf_model.h"
#include "model/quant_policy.h"
#include "tokenizer/gguf_vocab_export.h"

namespace plexus {
namespace {

// A row of `t` (f32 | bf16 | f16) as f32.
void row_to_f32(DType t, const void* src, float* dst, std::int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, static_cast<std::size_t>(n) * 4); return;
    case DType::kBF16: {
      const auto* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::kF16: {
      const auto* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    default: break;  // a block format
  }
  throw InputError("a checkpoint tensor in block format " + std::string(dtype_name(t)) + " cannot be re-quantised");
}

// The HF row that lands at row `r` when llama.cpp's converter permutes q/k for its rope: within
// each head of `head_dim` rows, HF row j of the first half goes to 2j, row j of the second half
// to 2j + 1.
std::int64_t permuted_source_row(std::int64_t r, std::int64_t head_dim) {
  const std::int64_t head = r / head_dim, within = r % head_dim;
  return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

// llama.cpp takes the vocabulary's size from tokenizer.ggml.tokens and wants token_embd to have
// as many rows: a checkpoint whose embedding is padded past the tokenizer gets "[PAD<id>]"
// tokens of type unused (5) with score 0 up to config.vocab_size.
void pad_vocab(std::vector<std::pair<std::string, GgufValue>>& tok, std::int64_t vocab_size, const std::string& model_dir,
               std::vector<std::string>* warnings) {
  GgufValue* tokens = nullptr;
  for (auto& [k, v] : tok) {
    if (k == "tokenizer.ggml.tokens") tokens = &v;
  }
  if (tokens == nullptr) return;
  const auto n = static_cast<std::int64_t>(tokens->arr.size());
  if (n > vocab_size) {
    warnings->push_back("'" + model_dir + "': the tokenizer has " + std::to_string(n) + " tokens but the model's vocab_size is " +
                        std::to_string(vocab_size) + ": llama.cpp will refuse the file (plexus runs it)");
    return;
  }
  for (auto& [k, v] : tok) {
    if (k == "tokenizer.ggml.tokens") {
      for (std::int64_t id = n; id < vocab_size; ++id) v.arr.push_back(gguf_string("[PAD" + std::to_string(id) + "]"));
    } else if (k == "tokenizer.ggml.scores") {
      while (static_cast<std::int64_t>(v.arr.size()) < vocab_size) v.arr.push_back(gguf_f32(0.0f));
    } else if (k == "tokenizer.ggml.token_type") {
      while (static_cast<std::int64_t>(v.arr.size()) < vocab_size) v.arr.push_back(gguf_int(GgufType::kI32, 5));
    }
  }
}

std::string dir_name(const std::string& dir) {
  std::filesystem::path p(dir);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

std::string gguf_tensor_name(const std::string& hf) {
  for (const GgufNamePair& n : gguf_top_level_names())
    if (hf == n.hf) return n.gguf;
  static const std::regex kLayer(R"(model\.layers\.(\d+)\.(.+)\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(hf, m, kLayer)) return {};
  for (const GgufNamePair& p : gguf_layer_part_names()) {
    if (m[2] == p.hf) return "blk." + m[1].str() + "." + p.gguf + "." + m[3].str();
  }
  return {};
}

std::string gguf_arch_name(Arch a) {
  switch (a) {
    case Arch::kLlama:
    case Arch::kMistral: return "llama";
    case Arch::kQwen2: return "qwen2";
    case Arch::kQwen3: return "qwen3";
    case Arch::kMixtral: return "llama";  // llama.cpp runs Mixtral as llama with experts
    case Arch::kQwen3Moe: return "qwen3moe";
    case Arch::kGptOss: return "gpt-oss";
  }
  return "llama";
}

std::vector<float> llama3_rope_freq_factors(const ModelConfig& c) {
  const double low_wavelen = static_cast<double>(c.rope_original_max_position) / c.rope_low_freq_factor;
  const double high_wavelen = static_cast<double>(c.rope_original_max_position) / c.rope_high_freq_factor;
  std::vector<float> out;
  for (std::int64_t i = 0; i < c.head_dim; i += 2) {
    const double freq = 1.0 / std::pow(c.rope_theta, static_cast<double>(i) / static_cast<double>(c.head_dim));
    const double wavelen = 2 * M_PI / freq;
    double factor = 1.0;
    if (wavelen > low_wavelen) {
      factor = c.rope_factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (static_cast<double>(c.rope_original_max_position) / wavelen - c.rope_low_freq_factor) /
                            (c.rope_high_freq_factor - c.rope_low_freq_factor);
      factor = 1.0 / ((1 - smooth) / c.rope_factor + smooth);
    }
    out.push_back(static_cast<float>(factor));
  }
  return out;
}

GgufExportResult export_gguf(const std::string& model_dir, const std::string& out, const GgufExportOptions& o) {
  require_model_path(model_dir);
  const ModelConfig c = load_model_config(model_dir);
  if (c.arch == Arch::kGptOss || c.rope_scaling == RopeScaling::kYarn) {
    throw InputError(model_dir + ": " + std::string(arch_name(c.arch)) +
                     (c.arch == Arch::kGptOss ? " (gpt-oss)" : " with YaRN rope scaling") + " cannot be written to GGUF yet");
  }
  if (c.is_moe()) {
    throw InputError(model_dir + ": " + std::string(arch_name(c.arch)) +
                     " is a mixture of experts; writing its stacked expert tensors to GGUF is not built yet");
  }
  const Checkpoint ckpt(model_dir);
  const std::string arch = gguf_arch_name(c.arch);
  GgufExportResult result;

  GgufWriter w(32);
  w.add("general.architecture", gguf_string(arch));
  w.add("general.name", gguf_string(o.name.empty() ? dir_name(model_dir) : o.name));
  w.add("general.alignment", gguf_u32(32));
  w.add("general.file_type", gguf_u32(quant_mix_info(o.mix).ftype));
  w.add("general.quantization_version", gguf_u32(2));
  const auto key = [&](const std::string& k) { return arch + "." + k; };
  w.add(key("context_length"), gguf_u32(static_cast<std::uint32_t>(c.max_position_embeddings)));
  w.add(key("embedding_length"), gguf_u32(static_cast<std::uint32_t>(c.hidden_size)));
  w.add(key("block_count"), gguf_u32(static_cast<std::uint32_t>(c.num_layers)));
  w.add(key("feed_forward_length"), gguf_u32(static_cast<std::uint32_t>(c.intermediate_size)));
  w.add(key("attention.head_count"), gguf_u32(static_cast<std::uint32_t>(c.num_heads)));
  w.add(key("attention.head_count_kv"), gguf_u32(static_cast<std::uint32_t>(c.num_kv_heads)));
  w.add(key("attention.key_length"), gguf_u32(static_cast<std::uint32_t>(c.head_dim)));
  w.add(key("attention.value_length"), gguf_u32(static_cast<std::uint32_t>(c.head_dim)));
  w.add(key("attention.layer_norm_rms_epsilon"), gguf_f32(static_cast<float>(c.rms_norm_eps)));
  w.add(key("rope.freq_base"), gguf_f32(static_cast<float>(c.rope_theta)));
  w.add(key("rope.dimension_count"), gguf_u32(static_cast<std::uint32_t>(c.head_dim)));
  switch (c.rope_scaling) {
    case RopeScaling::kNone: break;
    case RopeScaling::kLinear:
      w.add(key("rope.scaling.type"), gguf_string("linear"));
      w.add(key("rope.scaling.factor"), gguf_f32(static_cast<float>(c.rope_factor)));
      break;
    case RopeScaling::kLlama3: break;  // the rope_freqs.weight tensor below
    case RopeScaling::kYarn: break;    // refused above
  }
  w.add(key("vocab_size"), gguf_u32(static_cast<std::uint32_t>(c.vocab_size)));
  std::vector<std::pair<std::string, GgufValue>> tok = gguf_tokenizer_metadata(model_dir);
  if (tok.empty()) {
    result.warnings.push_back("'" + model_dir + "' has no tokenizer.json: the file has no tokenizer.ggml.* keys, and llama.cpp "
                              "needs that vocabulary to load it (plexus runs it with --ids)");
  } else {
    pad_vocab(tok, c.vocab_size, model_dir, &result.warnings);
    for (auto& [k, v] : tok) w.add(k, std::move(v));
    result.tokenizer = true;
  }

  // The tensors in llama.cpp's order: token_embd, rope_freqs, blocks, output_norm, output.
  std::vector<std::string> names = ckpt.names();
  std::vector<std::pair<std::string, std::string>> order;  // (gguf name, hf name)
  std::map<std::string, std::string> by_gguf;
  for (const std::string& n : names) {
    const std::string g = gguf_tensor_name(n);
    if (g.empty()) {
      if (n.find("rotary_emb.inv_freq") != std::string::npos) continue;  // derived, not a weight
      throw InputError("'" + model_dir + "': tensor '" + n + "' has no GGUF counterpart; plexus quantize cannot convert it");
    }
    if (n == "lm_head.weight" && c.tie_word_embeddings) continue;
    by_gguf[g] = n;
  }
  const auto take = [&](const std::string& g) {
    const auto it = by_gguf.find(g);
    if (it == by_gguf.end()) return;
    order.emplace_back(it->first, it->second);
    by_gguf.erase(it);
  };
  take("token_embd.weight");
  const bool llama3_rope = c.rope_scaling == RopeScaling::kLlama3;
  for (std::int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* part : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm",
                             "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"}) {
      take(p + part + ".weight");
      take(p + part + ".bias");
    }
  }
  take("output_norm.weight");
  take("output.weight");
  if (!by_gguf.empty()) {
    throw InputError("'" + model_dir + "': tensor '" + by_gguf.begin()->second + "' is outside the model's " +
                     std::to_string(c.num_layers) + " layers");
  }

  const QuantModelFacts facts = quant_model_facts(c);
  ThreadPool pool(o.threads);
  const bool permute = arch == "llama";
  if (llama3_rope) {
    auto factors = std::make_shared<std::vector<float>>(llama3_rope_freq_factors(c));
    w.add_tensor("rope_freqs.weight", {static_cast<std::int64_t>(factors->size())}, 0, factors->size() * 4,
                 [factors](void* dst) { std::memcpy(dst, factors->data(), factors->size() * 4); });
  }
  for (const auto& [g, hf] : order) {
    const TensorRef ref = ckpt.get(hf);
    const TensorInfo& info = *ref.info;
    if (!info.dtype_supported || dtype_is_block(info.dtype)) {
      throw InputError("'" + model_dir + "': tensor '" + hf + "' has dtype " + info.dtype_name + " (f32, bf16 or f16 expected)");
    }
    std::vector<std::int64_t> dims(info.shape.rbegin(), info.shape.rend());  // GGUF: innermost first
    const std::int64_t cols = info.shape.back();
    const std::int64_t rows = info.numel() / cols;
    const DType src = info.dtype;
    const void* data = ref.data;
    const bool q_or_k = g.find(".attn_q.") != std::string::npos || g.find(".attn_k.") != std::string::npos;
    const bool reorder = permute && q_or_k;
    const std::int64_t head_dim = c.head_dim;
    const std::optional<DType> chosen = info.shape.size() == 2 ? quant_mix_type(o.mix, g, info.shape, facts) : std::nullopt;
    if (chosen) {
      // A weight matrix in the mix's type for it: a block format, or F16 where no block fits.
      const DType t = *chosen;
      const std::int64_t row_bytes = dtype_row_bytes(t, cols);
      const std::size_t in_row = dtype_size(src) * static_cast<std::size_t>(cols);
      w.add_tensor(g, dims, ggml_type_of(t), static_cast<std::uint64_t>(rows * row_bytes),
                   [=, &pool](void* dst) {
                     pool.parallel_for(rows, 1, [&](std::int64_t b, std::int64_t e) {
                       std::vector<float> row(static_cast<std::size_t>(cols));  // (cols)
                       for (std::int64_t r = b; r < e; ++r) {
                         const std::int64_t s = reorder ? permuted_source_row(r, head_dim) : r;
                         row_to_f32(src, static_cast<const char*>(data) + static_cast<std::size_t>(s) * in_row, row.data(), cols);
                         quantize_row(t, row.data(), static_cast<char*>(dst) + r * row_bytes, cols);  // a block format, or F16
                       }
                     });
                   });
      if (dtype_is_block(t)) ++result.quantised;
    } else if (info.shape.size() == 1) {
      // Norms and biases as F32; a llama q/k bias is permuted like its weight's rows.
      const std::int64_t n = info.numel();
      w.add_tensor(g, dims, 0, static_cast<std::uint64_t>(n) * 4, [=](void* dst) {
        std::vector<float> v(static_cast<std::size_t>(n));
        row_to_f32(src, data, v.data(), n);
        float* d = static_cast<float*>(dst);
        for (std::int64_t i = 0; i < n; ++i) d[i] = v[static_cast<std::size_t>(reorder ? permuted_source_row(i, head_dim) : i)];
      });
    } else {
      // A matrix the mix leaves as stored (none of llama.cpp's names today), bytes as stored.
      const std::uint64_t bytes = info.end - info.begin;
      w.add_tensor(g, dims, ggml_type_of(src), bytes, [=](void* dst) { std::memcpy(dst, data, bytes); });
    }
  }
  result.tensors = w.tensor_count();
  result.bytes = w.file_size();
  w.write(out, [&](std::size_t i, const std::string& name) {
    if (o.progress) o.progress(i, w.tensor_count(), name);
  });
  return result;
}

}  // namespace plexus

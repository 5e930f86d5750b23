// A safetensors checkpoint written out as a GGUF file the way llama.cpp's converter lays it out
// (GGUF names and dims order, llama q/k rows permuted to interleaved-pair rope) runs to the same
// NLLs as the checkpoint itself: Llama (interleaved rope), Qwen2 (q/k/v biases), Qwen3 (q/k norms).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "core/gguf_file.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/gguf_export.h"
#include "model/make_model.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"
#include "gguf_bytes.h"

namespace plexus {
namespace {



// Writes the f32 checkpoint at DIR as OUT (a GGUF v3 file).
void write_gguf(const std::string& dir, const std::string& out) {
  const ModelConfig c = load_model_config(dir);
  const Checkpoint ck(dir);
  const char* arch = c.arch == Arch::kLlama ? "llama" : c.arch == Arch::kQwen2 ? "qwen2" : "qwen3";
  const std::string a = arch;
  const std::vector<std::string> names = ck.names();
  GgufBytes w;
  w.put<std::uint32_t>(0x46554747);
  w.put<std::uint32_t>(3);
  w.put<std::uint64_t>(names.size());
  w.put<std::uint64_t>(12);
  w.kv_str("general.architecture", a);
  w.kv_u32(a + ".embedding_length", static_cast<std::uint32_t>(c.hidden_size));
  w.kv_u32(a + ".block_count", static_cast<std::uint32_t>(c.num_layers));
  w.kv_u32(a + ".attention.head_count", static_cast<std::uint32_t>(c.num_heads));
  w.kv_u32(a + ".attention.head_count_kv", static_cast<std::uint32_t>(c.num_kv_heads));
  w.kv_u32(a + ".attention.key_length", static_cast<std::uint32_t>(c.head_dim));
  w.kv_u32(a + ".feed_forward_length", static_cast<std::uint32_t>(c.intermediate_size));
  w.kv_u32(a + ".context_length", static_cast<std::uint32_t>(c.max_position_embeddings));
  w.kv_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  w.kv_f32(a + ".rope.freq_base", static_cast<float>(c.rope_theta));
  w.kv_u32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(*c.bos_token_id));
  w.kv_u32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(c.eos_token_ids.at(0)));
  std::vector<std::vector<float>> data;
  std::uint64_t offset = 0;
  for (const std::string& hf : names) {
    const TensorRef r = ck.get(hf);
    EXPECT_EQ(r.info->dtype, DType::kF32);
    const auto* src = static_cast<const float*>(r.data);
    std::vector<float>& d = data.emplace_back(src, src + r.info->numel());
    const bool qk = hf.find("self_attn.q_proj.") != std::string::npos || hf.find("self_attn.k_proj.") != std::string::npos;
    if (c.arch == Arch::kLlama && qk) {  // rotate-half rows -> interleaved pairs, per head
      const std::int64_t cols = r.info->shape.size() > 1 ? r.info->shape[1] : 1, hd = c.head_dim, half = hd / 2;
      const std::int64_t heads = r.info->shape[0] / hd;
      for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t i = 0; i < hd; ++i) {
          const std::int64_t to = h * hd + (i < half ? 2 * i : 2 * (i - half) + 1);
          std::memcpy(d.data() + to * cols, src + (h * hd + i) * cols, static_cast<std::size_t>(cols) * sizeof(float));
        }
      }
    }
    w.str(gguf_tensor_name(hf));
    w.put<std::uint32_t>(static_cast<std::uint32_t>(r.info->shape.size()));
    for (auto it = r.info->shape.rbegin(); it != r.info->shape.rend(); ++it) w.put<std::uint64_t>(static_cast<std::uint64_t>(*it));
    w.put<std::uint32_t>(0);
    w.put<std::uint64_t>(offset);
    offset += (d.size() * 4 + 31) / 32 * 32;
  }
  while (w.b.size() % 32) w.b.push_back(0);
  for (const auto& d : data) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(d.data());
    w.b.insert(w.b.end(), p, p + d.size() * 4);
    while (w.b.size() % 32) w.b.push_back(0);
  }
  std::ofstream(out, std::ios::binary).write(reinterpret_cast<const char*>(w.b.data()), static_cast<std::streamsize>(w.b.size()));
}

TEST(GgufRoundTrip, EachArchitectureRunsLikeItsCheckpoint) {
  for (Arch arch : {Arch::kLlama, Arch::kQwen2, Arch::kQwen3}) {
    SCOPED_TRACE(std::string(arch_name(arch)));
    testing::TempDir dir("gguf_rt");
    MakeModelOptions o;
    o.arch = arch;
    o.dtype = DType::kF32;
    o.seed = 5;
    o.std = 0.08;
    write_random_model(dir.path(), o);
    const std::string gguf = dir / "model.gguf";
    write_gguf(dir.path(), gguf);
    const ModelConfig c = load_model_config(gguf);
    EXPECT_EQ(c.rope_interleaved, arch == Arch::kLlama);
    const std::vector<std::int32_t> ids = testing::some_ids(24, c.vocab_size, 3);
    Engine st(dir.path(), EngineOptions{});
    Engine gg(gguf, EngineOptions{});
    const PerplexityResult a = perplexity(st, ids), b = perplexity(gg, ids);
    ASSERT_EQ(a.nll.size(), b.nll.size());
    double spread = 0;
    for (std::size_t i = 0; i < a.nll.size(); ++i) {
      EXPECT_NEAR(a.nll[i], b.nll[i], 1e-4) << "token " << i;
      spread += std::abs(a.nll[i] - a.nll[0]);
    }
    EXPECT_GT(spread, 1e-3);  // the NLLs are not all the same (the model computes something)
  }
}

}  // namespace
}  // namespace plexus

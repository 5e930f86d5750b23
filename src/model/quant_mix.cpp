// The named mixes' per-tensor rules, as llama.cpp's llama_tensor_get_type states them for models
// without experts or an importance matrix (llama-family architectures, not Falcon).
#include "model/quant_mix.h"

#include <cctype>
#include <cstdlib>

namespace plexus {
namespace {

constexpr QuantMixInfo kMixes[] = {
    {QuantMix::kQ8_0, "Q8_0", DType::kQ8_0, 7, "8.5 bits: every weight Q8_0"},
    {QuantMix::kQ6_K, "Q6_K", DType::kQ6_K, 18, "6.6 bits: every weight Q6_K"},
    {QuantMix::kQ5_K_M, "Q5_K_M", DType::kQ5_K, 17, "Q5_K; attn_v and ffn_down of about half the layers Q6_K; output Q6_K"},
    {QuantMix::kQ5_K_S, "Q5_K_S", DType::kQ5_K, 16, "Q5_K; output Q6_K"},
    {QuantMix::kQ5_1, "Q5_1", DType::kQ5_1, 9, "Q5_1 (blocks of 32 with an offset); output Q6_K"},
    {QuantMix::kQ5_0, "Q5_0", DType::kQ5_0, 8, "Q5_0 (blocks of 32); output Q6_K"},
    {QuantMix::kQ4_K_M, "Q4_K_M", DType::kQ4_K, 15, "Q4_K; attn_v and ffn_down of about half the layers Q6_K; output Q6_K"},
    {QuantMix::kQ4_K_S, "Q4_K_S", DType::kQ4_K, 14, "Q4_K; attn_v of layers 0-3 and ffn_down of the first 1/8 Q5_K; output Q6_K"},
    {QuantMix::kQ4_1, "Q4_1", DType::kQ4_1, 3, "Q4_1 (blocks of 32 with an offset); output Q6_K"},
    {QuantMix::kQ4_0, "Q4_0", DType::kQ4_0, 2, "Q4_0 (blocks of 32); output Q6_K"},
    {QuantMix::kIQ4_XS, "IQ4_XS", DType::kIQ4_XS, 30, "IQ4_XS (non-linear 4 bits); ffn_down of the first 1/8 Q5_K; output Q6_K"},
    {QuantMix::kIQ4_NL, "IQ4_NL", DType::kIQ4_NL, 25, "IQ4_NL (non-linear 4 bits, blocks of 32); ffn_down of the first 1/8 Q5_K; output Q6_K"},
    {QuantMix::kQ3_K_M, "Q3_K_M", DType::kQ3_K, 12, "Q3_K; attn_v Q5_K (layers 0-1) / Q4_K, attn_output Q4_K, ffn_down Q5_K / Q4_K; output Q6_K"},
    {QuantMix::kQ2_K, "Q2_K", DType::kQ2_K, 10, "Q2_K; attn_v, attn_output and ffn_down Q3_K (attn_v Q4_K with 4+ query heads per KV head); output Q6_K"},
};

enum class Role { kOther, kOutput, kTokenEmbd, kAttnK, kAttnV, kAttnOutput, kFfnDown };

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}
bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Role role_of(std::string_view name) {
  if (name == "output.weight" || name == "lm_head.weight") return Role::kOutput;
  if (name == "token_embd.weight" || ends_with(name, "embed_tokens.weight")) return Role::kTokenEmbd;
  if (has(name, "attn_k.weight") || has(name, "k_proj.weight")) return Role::kAttnK;
  if (has(name, "attn_v.weight") || has(name, "v_proj.weight")) return Role::kAttnV;
  if (has(name, "attn_output.weight") || has(name, "o_proj.weight")) return Role::kAttnOutput;
  if (has(name, "ffn_down") || has(name, "down_proj") || (has(name, ".experts.") && ends_with(name, ".w2.weight"))) return Role::kFfnDown;
  return Role::kOther;
}

// A mixture-of-experts router (Mixtral, Qwen3-MoE, GGUF).
bool is_router_weight(std::string_view name) {
  return ends_with(name, ".block_sparse_moe.gate.weight") || ends_with(name, ".mlp.gate.weight") || has(name, "ffn_gate_inp");
}

// The layer of "blk.N." or "layers.N." in the name; 0 when there is none.
int layer_of(std::string_view name) {
  for (std::string_view prefix : {"blk.", "layers."}) {
    const std::size_t at = name.find(prefix);
    if (at != std::string_view::npos) return std::atoi(std::string(name.substr(at + prefix.size())).c_str());
  }
  return 0;
}

// llama.cpp's "more bits" layers: the first and last eighth, and every third layer between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// The type a row of `cols` takes when `t`'s block does not divide it.
DType fallback(DType t, std::int64_t cols) {
  if (cols % dtype_block_elems(t) == 0) return t;
  DType r = t;
  switch (t) {
    case DType::kIQ4_XS: r = DType::kIQ4_NL; break;
    case DType::kQ2_K:
    case DType::kQ3_K: r = DType::kQ4_0; break;
    case DType::kQ4_K: r = DType::kQ5_0; break;
    case DType::kQ5_K: r = DType::kQ5_1; break;
    case DType::kQ6_K: r = DType::kQ8_0; break;
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL:
    case DType::kMXFP4:
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: break;
  }
  return cols % dtype_block_elems(r) == 0 ? r : DType::kF16;
}

// attn_v of layer i of n.
DType attn_v_type(QuantMix mix, DType t, int i, int n, const QuantModelFacts& f) {
  const std::int64_t gqa = f.n_kv_heads > 0 ? f.n_heads / f.n_kv_heads : 1;
  switch (mix) {
    case QuantMix::kQ2_K: t = gqa >= 4 ? DType::kQ4_K : DType::kQ3_K; break;
    case QuantMix::kIQ4_NL:
    case QuantMix::kIQ4_XS:
      if (gqa >= 4) t = DType::kQ5_K;
      break;
    case QuantMix::kQ3_K_M: t = i < 2 ? DType::kQ5_K : DType::kQ4_K; break;
    case QuantMix::kQ4_K_M:
    case QuantMix::kQ5_K_M:
      if (use_more_bits(i, n)) t = DType::kQ6_K;
      break;
    case QuantMix::kQ4_K_S:
      if (i < 4) t = DType::kQ5_K;
      break;
    case QuantMix::kQ8_0:
    case QuantMix::kQ6_K:
    case QuantMix::kQ5_K_S:
    case QuantMix::kQ5_1:
    case QuantMix::kQ5_0:
    case QuantMix::kQ4_1:
    case QuantMix::kQ4_0: break;
  }
  // llama.cpp's 70B rule (80 layers with grouped KV heads): 8 heads share attn_v, so more bits.
  if (f.n_layers == 80 && f.n_heads != f.n_kv_heads && (t == DType::kQ3_K || t == DType::kQ4_K)) t = DType::kQ5_K;
  if (f.n_experts == 8) t = DType::kQ8_0;  // llama.cpp: "for the 8-expert model, bumping this to Q8_0 trades just ~128MB"
  return t;
}

DType ffn_down_type(QuantMix mix, DType t, int i, int n) {
  switch (mix) {
    case QuantMix::kQ2_K: return DType::kQ3_K;
    case QuantMix::kQ3_K_M: return i < n / 16 ? DType::kQ5_K : DType::kQ4_K;
    case QuantMix::kQ4_K_M:
    case QuantMix::kQ5_K_M: return use_more_bits(i, n) ? DType::kQ6_K : t;
    case QuantMix::kIQ4_NL:
    case QuantMix::kIQ4_XS:
    case QuantMix::kQ4_K_S: return i < n / 8 ? DType::kQ5_K : t;
    case QuantMix::kQ8_0:
    case QuantMix::kQ6_K:
    case QuantMix::kQ5_K_S:
    case QuantMix::kQ5_1:
    case QuantMix::kQ5_0:
    case QuantMix::kQ4_1:
    case QuantMix::kQ4_0: break;
  }
  return t;
}

}  // namespace

std::span<const QuantMixInfo> quant_mixes() { return kMixes; }

const QuantMixInfo& quant_mix_info(QuantMix mix) {
  for (const QuantMixInfo& m : kMixes) {
    if (m.mix == mix) return m;
  }
  return kMixes[0];
}

std::string quant_mix_lower_name(QuantMix mix) {
  std::string s(quant_mix_info(mix).name);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string quant_mix_list() {
  std::string s;
  for (const QuantMixInfo& m : kMixes) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

std::optional<QuantMix> parse_quant_mix(std::string_view name) {
  std::string up(name);
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (up == "Q4_K") up = "Q4_K_M";
  if (up == "Q5_K") up = "Q5_K_M";
  if (up == "Q3_K") up = "Q3_K_M";
  for (const QuantMixInfo& m : kMixes) {
    if (m.name == up) return m.mix;
  }
  return std::nullopt;
}

std::optional<DType> quant_mix_type(QuantMix mix, std::string_view name, std::span<const std::int64_t> shape,
                                    const QuantModelFacts& facts) {
  if (shape.size() < 2 || !ends_with(name, "weight") || has(name, "norm.weight")) return std::nullopt;
  if (is_router_weight(name)) return std::nullopt;  // llama.cpp keeps the expert router as stored
  const DType base = quant_mix_info(mix).base;
  const std::int64_t cols = shape.back();
  const int n = static_cast<int>(facts.n_layers);
  DType t = base;
  switch (role_of(name)) {
    case Role::kTokenEmbd:
      if (!facts.tied_embeddings) break;
      [[fallthrough]];  // a tied embedding is also the output: it takes the output's type
    case Role::kOutput:
      if (cols % dtype_block_elems(base) != 0) t = DType::kQ8_0;
      else if (base != DType::kQ8_0) t = DType::kQ6_K;
      break;
    case Role::kAttnV: t = attn_v_type(mix, base, layer_of(name), n, facts); break;
    case Role::kFfnDown: t = ffn_down_type(mix, base, layer_of(name), n); break;
    case Role::kAttnK:
      if (facts.n_experts == 8) t = DType::kQ8_0;  // as attn_v
      break;
    case Role::kAttnOutput:
      if (facts.n_experts == 8) {  // llama.cpp's 8-expert rule replaces the two below
        if (mix == QuantMix::kQ2_K || mix == QuantMix::kQ3_K_M || mix == QuantMix::kIQ4_NL || mix == QuantMix::kQ4_K_S ||
            mix == QuantMix::kQ4_K_M || mix == QuantMix::kIQ4_XS)
          t = DType::kQ5_K;
        break;
      }
      if (mix == QuantMix::kQ2_K) t = DType::kQ3_K;
      if (mix == QuantMix::kQ3_K_M) t = DType::kQ4_K;
      break;
    case Role::kOther: break;
  }
  return fallback(t, cols);
}

}  // namespace plexus

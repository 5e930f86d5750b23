// A plain double-precision forward pass of GPT-2 (Hugging Face's GPT2LMHeadModel), written from
// its modeling semantics and independent of the engine: it reads config.json's GPT-2 names and
// the safetensors file's own tensor names and Conv1D layout (not plexus's renaming of them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::testing {

// Per-token NLL (natural log) of ids[t+1] given ids[..t] of the GPT-2 checkpoint in `model_dir`
// (one model.safetensors, names with or without "transformer."); the last position's logits in
// `last_logits` if non-null.
std::vector<double> reference_gpt2_nll(const std::string& model_dir, const std::vector<std::int32_t>& ids,
                                       std::vector<double>* last_logits = nullptr);

}  // namespace plexus::testing

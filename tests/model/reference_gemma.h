// A plain double-precision forward pass of Gemma 2 and Gemma 3 text models, written from Hugging
// Face's Gemma2ForCausalLM / Gemma3ForCausalLM semantics and independently of the engine (its own
// config reading with Hugging Face's defaults, its own safetensors reading, no shared kernels).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::testing {

// Per-token NLL (natural log) of ids[t+1] given ids[..t] for the Gemma checkpoint in `model_dir`
// (config.json + model.safetensors; a Gemma3ForConditionalGeneration's language model under
// `language_model.`). Also the last position's logits in `last_logits` if non-null.
std::vector<double> reference_gemma_nll(const std::string& model_dir, const std::vector<std::int32_t>& ids,
                                        std::vector<double>* last_logits = nullptr);

}  // namespace plexus::testing

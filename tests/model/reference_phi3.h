// A plain double-precision forward pass of Phi-3 (Phi3ForCausalLM), written from the Hugging Face
// modeling semantics and independent of the engine (no shared kernels, its own config.json
// reading), for model-level tests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::testing {

// Per-token NLL (natural log) of ids[t+1] given ids[..t] under the checkpoint in `model_dir`, the
// ids run as forward calls of `chunk` tokens each (0: one call), each call's keys added to the
// cache as Hugging Face's Phi-3 does: under LongRoPE a call whose largest position + 1 passes
// original_max_position_embeddings rotates its queries and keys with the long factors, the
// others with the short ones. Also the logits of the last position in `last_logits` if non-null.
std::vector<double> reference_phi3_nll(const std::string& model_dir, const std::vector<std::int32_t>& ids, std::int64_t chunk = 0,
                                       std::vector<double>* last_logits = nullptr);

}  // namespace plexus::testing

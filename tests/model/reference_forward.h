// A plain double-precision forward pass of the Llama family, written independently of the
// engine (no shared kernels), for model-level tests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::testing {

// Per-token NLL (natural log) of ids[t+1] given ids[..t], computed in double from the
// checkpoint in `model_dir`; also the logits of the last position in `last_logits` if non-null.
std::vector<double> reference_nll(const std::string& model_dir, const std::vector<std::int32_t>& ids,
                                  std::vector<double>* last_logits = nullptr);

}  // namespace plexus::testing

// Writing a random-weight model with an optional real tokenizer: `plexus make-model` and a
// benchmark's `model_make` (which makes the model when its directory has none).
#pragma once
#include <cstdint>
#include <string>

#include "model/make_model.h"

namespace plexus {

// Writes OUT/config.json + weights; with `tokenizer` (a directory holding tokenizer.json, or
// the file) copies tokenizer.json (+ tokenizer_config.json, special_tokens_map.json), takes its
// bos/eos ids and sizes the vocabulary to fit it. Returns the number of parameters.
std::int64_t make_model_with_tokenizer(const std::string& out, MakeModelOptions options, const std::string& tokenizer);

}  // namespace plexus

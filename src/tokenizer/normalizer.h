// tokenizer.json "normalizer": text rewrites applied before pre-tokenization (NFC, Prepend,
// Replace, Lowercase, Strip, StripAccents, NFD/NFKC/NFKD and Sequence of these).
#pragma once
#include <memory>
#include <string>

#include "core/json.h"

namespace plexus {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;  // text is valid UTF-8
};

// Builds the normalizer described by `spec` (null gives nullptr). `where` names the JSON path
// for errors; an unknown "type" is an InputError listing the supported ones.
std::unique_ptr<Normalizer> make_normalizer(const Json& spec, const std::string& where);

}  // namespace plexus

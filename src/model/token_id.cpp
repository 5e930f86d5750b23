// The vocabulary check's error.
#include "model/token_id.h"

#include <string>

#include "core/error.h"

namespace plexus {

void throw_token_id_outside(std::int64_t id, std::int64_t vocab, std::string_view where) {
  const std::string prefix = where.empty() ? std::string() : std::string(where) + ": ";
  throw InputError(prefix + "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

}  // namespace plexus

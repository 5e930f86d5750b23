// The vocabulary check's errors, and ids read from JSON.
#include "model/token_id.h"

#include <string>

#include "core/error.h"

namespace plexus {

namespace {

std::string prefix_of(std::string_view where) { return where.empty() ? std::string() : std::string(where) + ": "; }

[[noreturn]] void throw_outside(const std::string& id_text, std::int64_t vocab, std::string_view where) {
  throw InputError(prefix_of(where) + "token id " + id_text + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

}  // namespace

void throw_token_id_outside(std::int64_t id, std::int64_t vocab, std::string_view where) {
  throw_outside(std::to_string(id), vocab, where);
}

std::int32_t json_token_id(const Json& v, std::int64_t vocab, std::string_view where) {
  if (!v.is_number_integer()) throw InputError(prefix_of(where) + v.dump() + " is not a token id (an integer)");
  const std::optional<std::int64_t> id = json_int64(v);
  if (!id || *id < 0 || *id >= vocab) throw_outside(v.dump(), vocab, where);
  return static_cast<std::int32_t>(*id);
}

}  // namespace plexus

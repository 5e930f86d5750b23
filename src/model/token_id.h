// The one check that a token id is inside the model's vocabulary, for every place ids come in
// (command-line lists, request files, benchmark prompts) or are looked up (embedding, scoring).
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "core/json.h"

namespace plexus {

// Throws InputError "WHERE: token id N is outside the vocabulary [0, V)" (no prefix when `where`
// is empty).
[[noreturn]] void throw_token_id_outside(std::int64_t id, std::int64_t vocab, std::string_view where);

inline void check_token_id(std::int64_t id, std::int64_t vocab, std::string_view where = {}) {
  if (id < 0 || id >= vocab) [[unlikely]] throw_token_id_outside(id, vocab, where);
}

inline void check_token_ids(std::span<const std::int32_t> ids, std::int64_t vocab, std::string_view where = {}) {
  for (std::int32_t id : ids) check_token_id(id, vocab, where);
}

// A JSON value (a request line's or data file's id) as a token id inside [0, vocab). InputError
// "WHERE: token id N is outside the vocabulary [0, V)" with N as written (18446744073709551615,
// never the -1 a 64-bit cast makes of it), or "WHERE: V is not a token id (an integer)".
std::int32_t json_token_id(const Json& v, std::int64_t vocab, std::string_view where = {});

}  // namespace plexus

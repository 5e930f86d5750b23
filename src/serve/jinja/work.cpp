// The work budget of a render (see work.h).
#include "serve/jinja/work.h"

#include "serve/chat_template.h"

namespace plexus::jinja {

void Work::steps(std::int64_t n) {
  if (n > limits_.max_steps - steps_)
    throw TemplateError("the template runs more than " + std::to_string(limits_.max_steps) + " steps (a loop too long?)");
  steps_ += n;
}

void Work::bytes(std::uint64_t n, const char* what) {
  if (n > limits_.max_bytes - bytes_)
    throw TemplateError(std::string(what) + ": the template touches more than " + std::to_string(limits_.max_bytes) +
                        " bytes (its work limit: bytes compared, scanned, copied or made)");
  bytes_ += n;
}

void Work::bytes(std::uint64_t per_item, std::uint64_t items, const char* what) {
  std::uint64_t n = 0;
  if (__builtin_mul_overflow(per_item, items, &n)) n = UINT64_MAX;
  bytes(n, what);
}

void Work::check_size(std::uint64_t size) const {
  if (size > limits_.max_output)
    throw TemplateError("a value or the output grows past " + std::to_string(limits_.max_output) + " bytes");
}

void Work::append(std::string& out, std::string_view piece, const char* what) {
  check_size(std::uint64_t{out.size()} + piece.size());
  bytes(piece.size(), what);
  out.append(piece);
}

void Work::check_items(std::uint64_t items) const {
  if (items > limits_.max_items) throw TemplateError("a list grows past " + std::to_string(limits_.max_items) + " items");
}

}  // namespace plexus::jinja

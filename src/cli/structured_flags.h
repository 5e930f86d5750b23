// `plexus generate --grammar FILE | --json-schema FILE | --json-object`: the grammar text the flags
// ask for, and the constraint that keeps every generated sequence inside it (src/structured).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/args.h"
#include "runtime/token_constraint.h"
#include "structured/grammar_cache.h"

namespace plexus {
class Tokenizer;
}

namespace plexus::cli {

void add_structured_flags(Args& args);

// The grammar text of the flag given (at most one), checked (InputError with the file, line and
// column or the schema keyword and its place); nullopt without any.
struct StructuredGrammar {
  std::string text;
  std::string source;  // the file, or "--json-object"
};
std::optional<StructuredGrammar> structured_grammar(const Args& args);

// One fresh matcher per sequence, over the model's vocabulary (tokenizer needed; `stop_ids` end
// a complete output), the compiled grammar taken from `cache`.
std::function<std::unique_ptr<TokenConstraint>()> structured_constraint(const StructuredGrammar& g, const Tokenizer* tok,
                                                                        std::int64_t model_vocab,
                                                                        const std::vector<std::int64_t>& stop_ids,
                                                                        structured::GrammarCache& cache);

}  // namespace plexus::cli

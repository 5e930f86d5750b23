// The structured-output flags of `plexus generate`.
#include "cli/structured_flags.h"

#include "core/error.h"
#include "core/json.h"
#include "core/mmap_file.h"
#include "structured/grammar_parser.h"
#include "structured/json_schema.h"
#include "structured/token_matcher.h"
#include "structured/vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace plexus::cli {

void add_structured_flags(Args& args) {
  args.option("--grammar", "FILE", "constrain the output to a grammar (GBNF; docs/structured_output.md)")
      .option("--json-schema", "FILE", "constrain the output to JSON valid under the JSON Schema in FILE")
      .flag("--json-object", "constrain the output to one JSON object");
}

std::optional<StructuredGrammar> structured_grammar(const Args& args) {
  const int given = int(args.has("--grammar")) + int(args.has("--json-schema")) + int(args.get_flag("--json-object"));
  if (given == 0) return std::nullopt;
  if (given > 1) throw InputError("give at most one of --grammar, --json-schema and --json-object");
  StructuredGrammar g;
  if (args.has("--grammar")) {
    g.source = args.get("--grammar");
    g.text = read_text_file(g.source);
    structured::parse_grammar(g.text, g.source);  // syntax errors now, before the model loads
  } else if (args.has("--json-schema")) {
    g.source = args.get("--json-schema");
    g.text = structured::json_schema_grammar(read_json_file(g.source), g.source);
    structured::parse_grammar(g.text, g.source + " (as a grammar)");
  } else {
    g.source = "--json-object";
    g.text = structured::json_object_grammar();
  }
  return g;
}

std::function<std::unique_ptr<TokenConstraint>()> structured_constraint(const StructuredGrammar& g, const Tokenizer* tok,
                                                                        std::int64_t model_vocab,
                                                                        const std::vector<std::int64_t>& stop_ids,
                                                                        structured::GrammarCache& cache) {
  if (!tok) throw InputError(g.source + ": structured output needs the model's tokenizer (tokenizer.json or GGUF metadata) to know each token's bytes");
  auto vocab = std::make_shared<const structured::Vocabulary>(structured::vocabulary_from_tokenizer(*tok, model_vocab, stop_ids));
  std::shared_ptr<const structured::CompiledGrammar> compiled = cache.get(g.text, vocab, g.source);
  return [compiled] { return std::make_unique<structured::TokenMatcher>(compiled); };
}

}  // namespace plexus::cli

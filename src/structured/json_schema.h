// JSON Schema -> grammar text (grammar_parser.h) whose sentences are compact JSON (no
// whitespace) that validates against the schema. Supported keywords and limits:
// docs/structured_output.md.
#pragma once
#include <string>

#include "core/json.h"

namespace plexus::structured {

// The grammar of any JSON object (response_format {"type": "json_object"}).
std::string json_object_grammar();

// The grammar of the JSON values `schema` accepts. InputError naming the keyword and its place
// (a JSON pointer into the schema) for an unsupported keyword, an invalid schema, or one that no
// value can satisfy. `source` prefixes the messages (e.g. the --json-schema file).
std::string json_schema_grammar(const Json& schema, const std::string& source = "JSON schema");

}  // namespace plexus::structured

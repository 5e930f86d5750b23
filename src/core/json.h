// JSON via nlohmann::json, with reads that name the file and the field when they fail.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace plexus {

using Json = nlohmann::json;

// The deepest nesting of arrays and objects (JSON) or sequences and maps (YAML) that plexus
// reads in any document: real configs, tokenizers, device maps and requests stay far below it,
// and everything that walks a document (parsers, copies, printing) stays well inside the stack.
inline constexpr int kMaxDocumentDepth = 256;

// InputError "WHERE: nested deeper than 256 levels (at byte N) ..." when `text` nests arrays and
// objects deeper than `max_depth`. Linear, allocation-free; run before any parse.
void check_json_depth(std::string_view text, const std::string& where, int max_depth = kMaxDocumentDepth);

// Parses a JSON file; InputError "FILE: invalid JSON at byte N: ..." on failure (numbers too
// large for a double and nesting past kMaxDocumentDepth included).
Json read_json_file(const std::string& path);
// Parses text; `where` names the source in errors. Every JSON plexus reads goes through here.
Json parse_json(const std::string& text, const std::string& where);

// For commands that take a GGUF file or a JSON document (a tokenizer.json, a config.json): returns
// when `text` (the file's contents, not GGUF) starts with '{' after a BOM and whitespace, else
// InputError "PATH is neither a GGUF file nor WHAT (a JSON object): it starts with the bytes
// 7f 45 4c 46 ...; HINT" (rather than whatever the parser makes of a binary file).
void require_json_object_text(std::string_view text, const std::string& path, const std::string& what, const std::string& hint);

// `v` as a 64-bit integer when it is an integer that fits; nullopt otherwise (a float, a string,
// an unsigned number above 2^63 - 1, which get<long long>() would wrap: 2^64 - 1 to -1).
std::optional<std::int64_t> json_int64(const Json& v);

// Typed field access with errors naming `where` and the key ("config.json: field
// 'hidden_size' must be a positive integer").
long long json_int(const Json& obj, const std::string& key, const std::string& where);
long long json_int_or(const Json& obj, const std::string& key, long long fallback, const std::string& where);
double json_number_or(const Json& obj, const std::string& key, double fallback, const std::string& where);
std::string json_string_or(const Json& obj, const std::string& key, const std::string& fallback,
                           const std::string& where);
bool json_bool_or(const Json& obj, const std::string& key, bool fallback, const std::string& where);

// The number at a dotted path of nested objects ("latency.ttft_ms.p50"), or nullopt when a key
// is missing or the value is not a number (null included).
std::optional<double> json_number_at(const Json& j, const std::string& dotted);

}  // namespace plexus

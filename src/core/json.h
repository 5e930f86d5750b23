// JSON via nlohmann::json, with reads that name the file and the field when they fail.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace plexus {

using Json = nlohmann::json;

// Parses a JSON file; InputError "FILE: invalid JSON at byte N: ..." on failure.
Json read_json_file(const std::string& path);
// Parses text; `where` names the source in errors.
Json parse_json(const std::string& text, const std::string& where);

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

// YAML text of a document built as ordered JSON (keys keep their insertion order, so manifests
// read apiVersion, kind, metadata, spec). Block style, two-space indents; strings plain where
// YAML reads them back as the same string, else double-quoted with every character outside
// printable_code_point escaped (escape.h), so YAML 1.1 and 1.2 readers read back the same string.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace plexus::deploy {

using YamlDoc = nlohmann::ordered_json;

// One YAML document (no leading "---"), ending in a newline.
std::string to_yaml(const YamlDoc& doc);

// `s` (UTF-8; InputError otherwise) as a YAML double-quoted scalar: '"' and '\\' escaped, \n \t \r,
// every other code point printable_code_point refuses as \xHH, \uHHHH or \UHHHHHHHH (NEL, U+2028,
// DEL, C0 and C1 controls among them); printable ones as they are.
std::string yaml_double_quoted(const std::string& s);

// Whether `s` can be written unquoted: not empty, no leading/trailing space, no indicator or
// comment characters where YAML would read them, and not a word YAML 1.1 or 1.2 reads as a
// bool, null or number ("yes", "off", "~", "1e3", "0x1f", "08").
bool plain_yaml_safe(const std::string& s);

}  // namespace plexus::deploy

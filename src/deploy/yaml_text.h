// YAML text of a document built as ordered JSON (keys keep their insertion order, so manifests
// read apiVersion, kind, metadata, spec). Block style, two-space indents; strings plain where
// YAML reads them back as the same string, else double-quoted.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace plexus::deploy {

using YamlDoc = nlohmann::ordered_json;

// One YAML document (no leading "---"), ending in a newline.
std::string to_yaml(const YamlDoc& doc);

// Whether `s` can be written unquoted: not empty, no leading/trailing space, no indicator or
// comment characters where YAML would read them, and not a word YAML 1.1 or 1.2 reads as a
// bool, null or number ("yes", "off", "~", "1e3", "0x1f", "08").
bool plain_yaml_safe(const std::string& s);

}  // namespace plexus::deploy

// The YAML emitter, read back by an independent parser (yaml-cpp): every value comes back as
// the same type and text.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "deploy/yaml_text.h"

namespace plexus::deploy {
namespace {

// yaml-cpp's node as ordered JSON: scalars come back as strings unless they resolve as YAML
// core-schema bools, nulls or numbers (the tag yaml-cpp gives plain scalars is "?").
YamlDoc back(const YAML::Node& n) {
  if (n.IsMap()) {
    YamlDoc o = YamlDoc::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = back(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    YamlDoc a = YamlDoc::array();
    for (const auto& v : n) a.push_back(back(v));
    return a;
  }
  if (n.IsNull()) return nullptr;
  const std::string s = n.as<std::string>();
  if (n.Tag() == "!") return s;  // quoted: a string whatever it reads as
  bool b = false;
  if (YAML::convert<bool>::decode(n, b)) return b;
  long long i = 0;
  if (YAML::convert<long long>::decode(n, i)) return i;
  double d = 0;
  if (YAML::convert<double>::decode(n, d)) return d;
  return s;
}

void expect_round_trip(const YamlDoc& doc) {
  const std::string text = to_yaml(doc);
  SCOPED_TRACE(text);
  EXPECT_EQ(back(YAML::Load(text)), doc);
}

TEST(YamlText, ManifestShapeReadsBackAsWritten) {
  YamlDoc doc = {{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"metadata", {{"name", "plexus-tiny"}, {"labels", {{"app", "plexus-tiny"}}}}},
                 {"spec",
                  {{"replicas", 1},
                   {"containers",
                    YamlDoc::array({{{"name", "server"},
                                     {"command", {"plexus", "serve", "/models/x", "--port", "8080"}},
                                     {"ports", YamlDoc::array({{{"containerPort", 8080}}})},
                                     {"env", YamlDoc::array()},
                                     {"resources", YamlDoc::object()}}})}}}};
  expect_round_trip(doc);
  const std::string text = to_yaml(doc);
  EXPECT_EQ(text.substr(0, 31), "apiVersion: apps/v1\nkind: Deplo");
  EXPECT_NE(text.find("  - name: server\n"), std::string::npos) << text;
}

TEST(YamlText, StringsThatLookLikeOtherTypesAreQuoted) {
  for (const char* s : {"yes", "No", "on", "OFF", "true", "null", "~", "08", "0x1f", "1e3", "1.5", "-1", ".5",
                        "8080:8080", "", " lead", "trail ", "a: b", "x #c", "#c", "- item", "-", "---", "*ref", "&a",
                        "!tag", "{a}", "[1]", "|", ">", "'q'", "\"q\"", "key:", "line\nbreak", "tab\there", "é", "@x", "%x",
                        "`x"}) {
    SCOPED_TRACE(s);
    EXPECT_FALSE(plain_yaml_safe(s));
    expect_round_trip(YamlDoc{{"v", s}});
    expect_round_trip(YamlDoc::array({s}));
  }
  for (const char* s : {"plexus", "--port", "/models/tiny-llama", "nvidia.com/gpu", "vllm/vllm-openai:latest",
                        "CMD-SHELL", "curl -f http://localhost:8080/health", "a:b", "x#y", "http://h:1/p", "1GiB-ish"}) {
    SCOPED_TRACE(s);
    EXPECT_EQ(plain_yaml_safe(s), std::string(s) != "1GiB-ish");  // a leading digit is quoted
    expect_round_trip(YamlDoc{{"v", s}});
  }
}

TEST(YamlText, NestedSequencesAndScalars) {
  expect_round_trip(YamlDoc{{"matrix", {{1, 2}, {"a", YamlDoc::array({{{"k", "v"}, {"n", nullptr}}})}}},
                            {"flag", false},
                            {"ratio", 0.25},
                            {"big", 8589934592LL}});
  EXPECT_EQ(to_yaml(YamlDoc("one")), "one\n");
  EXPECT_EQ(to_yaml(YamlDoc::object()), "{}\n");
}

}  // namespace
}  // namespace plexus::deploy

// Checked JSON reads: one depth limit for every document, numbers no double holds, errors that
// name the file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json.h"

namespace plexus {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json(text, "doc.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Json, NestingDeeperThanTheLimitIsAnInputErrorNotACrash) {
  // 60000 levels in 120 KB crashed (stack overflow) before the limit.
  for (const std::string open : {"[", "{\"a\":"}) {
    std::string deep;
    for (int i = 0; i < 60000; ++i) deep += open;
    const std::string m = error_of(deep);
    EXPECT_NE(m.find("doc.json: JSON nested deeper than 256 levels"), std::string::npos) << m.substr(0, 200);
  }
  // At the limit it parses; brackets inside strings do not count.
  const std::string ok = std::string(256, '[') + std::string(256, ']');
  EXPECT_NO_THROW(parse_json(ok, "ok"));
  EXPECT_NO_THROW(parse_json("{\"s\": \"" + std::string(1000, '[') + "\\\"[[[\"}", "strings"));
  EXPECT_NE(error_of(std::string(257, '[') + std::string(257, ']')).find("deeper than 256"), std::string::npos);
}

// The depth scan stops at the first byte no JSON text holds outside a string: the parser fails
// there (or before), so a binary file of '[' bytes is "invalid JSON", not "nested too deep".
TEST(Json, BinaryIsInvalidJsonNotTooDeep) {
  const std::string m = error_of(std::string("\x7f" "ELF") + std::string(5000, '['));
  EXPECT_NE(m.find("doc.json: invalid JSON at byte"), std::string::npos) << m.substr(0, 200);
  EXPECT_EQ(m.find("nested deeper"), std::string::npos) << m.substr(0, 200);
  // Deep nesting before the first such byte is still refused; a UTF-8 BOM is no such byte.
  EXPECT_NE(error_of(std::string(300, '[') + "\x01").find("nested deeper than 256"), std::string::npos);
  EXPECT_NE(error_of("\xEF\xBB\xBF" + std::string(300, '[')).find("nested deeper than 256"), std::string::npos);
  EXPECT_EQ(parse_json("\xEF\xBB\xBF{\"a\": [true, false, null, -1.5e+3]}", "bom")["a"].size(), 4u);
}

TEST(Json, NumbersNoDoubleHoldsAreInputErrors) {
  const std::string m = error_of("{\"ids\": [1e400]}");
  EXPECT_NE(m.find("doc.json: invalid JSON"), std::string::npos) << m;
}

TEST(Json, FilesAreNamedInDepthErrors) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("plexus_json_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir / "config.json";
  std::ofstream(path) << "{\"hidden_size\": " << std::string(20000, '[') << std::string(20000, ']') << "}";
  try {
    read_json_file(path);
    FAIL() << "read a 20000-deep file";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": JSON nested deeper than 256 levels (at byte ", 0), 0u) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace plexus

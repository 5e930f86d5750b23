// Shared helpers for tokenizer tests: golden paths, JSONL reading, seeded random UTF-8.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/json.h"
#include "test_util.h"
#include "tokenizer/utf8.h"

namespace plexus::test {

inline std::string golden_dir(const std::string& name) {
  return std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/" + name;
}

using testing::read_jsonl;  // tests/model/test_util.h

// Random valid UTF-8 mixing ASCII words, whitespace runs, and code points from every plane in use.
inline std::string random_utf8(std::mt19937& rng, int max_chars) {
  std::uniform_int_distribution<int> len(0, max_chars), kind(0, 9);
  std::string s;
  const int n = len(rng);
  for (int i = 0; i < n; ++i) {
    char32_t cp = 0;
    switch (kind(rng)) {
      case 0: case 1: case 2: cp = std::uniform_int_distribution<int>(0x20, 0x7E)(rng); break;
      case 3: cp = " \t\n\r"[std::uniform_int_distribution<int>(0, 3)(rng)]; break;
      case 4: cp = std::uniform_int_distribution<int>(0x00, 0x1F)(rng); break;
      case 5: cp = std::uniform_int_distribution<int>(0xA0, 0x2FFF)(rng); break;
      case 6: cp = std::uniform_int_distribution<int>(0x3000, 0xD7FF)(rng); break;
      case 7: cp = std::uniform_int_distribution<int>(0xE000, 0xFFFD)(rng); break;
      case 8: cp = std::uniform_int_distribution<int>(0x10000, 0x1FAFF)(rng); break;
      default: cp = std::uniform_int_distribution<int>(0x20000, 0x10FFFF)(rng); break;
    }
    utf8::append(s, cp);
  }
  return s;
}

}  // namespace plexus::test

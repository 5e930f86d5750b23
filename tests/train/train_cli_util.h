// Shared by the `plexus train` process tests: a tiny f32 model with tokenizer side files, a data
// file, the command line, and reading the JSON and output files back.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

#include "core/json.h"
#include "test_util.h"

namespace plexus::train_test {

// DIR/model (tiny Llama, vocab 300, f32; generation_config.json and tokenizer_config.json beside
// it) and DIR/data.jsonl (`lines` sequences of `tokens` ids).
inline void make_inputs(const testing::TempDir& dir, int lines = 12, int tokens = 17) {
  const std::string model = dir / "model";
  const testing::ProcessResult r = testing::run_plexus("make-model " + testing::shell_quote(model) + " --preset tiny --vocab 300 --dtype f32");
  if (r.exit_code != 0) throw std::runtime_error("make-model failed: " + r.err);
  std::ofstream(model + "/generation_config.json") << "{\"bos_token_id\": 1, \"eos_token_id\": 2}\n";
  std::ofstream(model + "/tokenizer_config.json") << "{\"model_max_length\": 2048}\n";
  std::ofstream data(dir / "data.jsonl");
  for (int i = 0; i < lines; ++i) {
    data << "{\"ids\": " << Json(testing::some_ids(tokens, 300, i + 1)).dump() << "}\n";
  }
}

// `plexus train MODEL --data DATA --out OUT --steps N --batch-size B EXTRA`, shell-quoted paths;
// DATA is DIR/data.jsonl unless given; --threads 1 unless EXTRA says.
inline std::string train_args(const testing::TempDir& dir, const std::string& out, int steps, int batch,
                              const std::string& extra = "", const std::string& data = "") {
  return "train " + testing::shell_quote(dir / "model") + " --data " + testing::shell_quote(data.empty() ? dir / "data.jsonl" : data) + " --out " +
         testing::shell_quote(out) + " --steps " + std::to_string(steps) + " --batch-size " + std::to_string(batch) +
         (extra.find("--threads") == std::string::npos ? " --threads 1 " : " ") + extra;
}

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace plexus::train_test

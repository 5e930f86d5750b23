// Verification only (not a test): llama.cpp's tokenizer on a GGUF vocabulary; stdin: one hex-encoded text per line, stdout: the ids (JSON), llama_tokenize(add_special=false, parse_special=true).
#include <llama.h>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  llama_backend_init();
  auto p = llama_model_default_params();
  p.vocab_only = true;
  llama_model* m = llama_model_load_from_file(argv[1], p);
  if (!m) return 1;
  const llama_vocab* v = llama_model_get_vocab(m);
  std::string line;
  while (std::getline(std::cin, line)) {  // one hex-encoded text per line
    std::string text;
    for (size_t i = 0; i + 1 < line.size(); i += 2) text += (char)std::stoi(line.substr(i, 2), nullptr, 16);
    std::vector<llama_token> t(text.size() * 4 + 16);
    int n = llama_tokenize(v, text.data(), (int)text.size(), t.data(), (int)t.size(), false, true);
    std::printf("[");
    for (int i = 0; i < n; ++i) std::printf(i ? ",%d" : "%d", t[i]);
    std::printf("]\n");
  }
  return 0;
}

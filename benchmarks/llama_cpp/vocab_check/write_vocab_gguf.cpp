// Verification only: GGUF file (no tensors) = golden file's llama.* keys + exported tokenizer keys.
// Usage: mk GOLDEN.gguf TOKENIZER_DIR OUT.gguf [PRE]
#include <cstdio>
#include <fstream>
#include "core/gguf_file.h"
#include "tokenizer/gguf_vocab_export.h"
using namespace plexus;
std::ofstream out;
template <class T> void w(T v) { out.write((const char*)&v, sizeof v); }
void ws(const std::string& s) { w<uint64_t>(s.size()); out.write(s.data(), s.size()); }
void wv(const GgufValue& v, uint32_t t) {
  switch (t) {
    case 4: w<uint32_t>((uint32_t)v.i); break;
    case 5: w<int32_t>((int32_t)v.i); break;
    case 6: w<float>((float)v.f); break;
    case 7: w<uint8_t>(v.b); break;
    case 8: ws(v.s); break;
    case 9: w<uint32_t>(v.elem_type); w<uint64_t>(v.arr.size()); for (auto& e : v.arr) wv(e, v.elem_type); break;
    case 10: w<uint64_t>((uint64_t)v.i); break;
    case 12: w<double>(v.f); break;
    default: fprintf(stderr, "type %u\n", t); exit(1);
  }
}
int main(int argc, char** argv) {
  GgufFile g(argv[1]);
  auto tok = gguf_tokenizer_metadata(argv[2]);
  std::vector<std::pair<std::string, GgufValue>> kv;
  for (auto& [k, v] : g.metadata()) if (k.rfind("tokenizer.", 0) != 0) kv.emplace_back(k, v);
  for (auto& p : tok) kv.push_back(p);
  if (argc > 4)  // argv[4]: another tokenizer.ggml.pre, to check that pre's regexes on this vocabulary
    for (auto& [k, v] : kv) if (k == "tokenizer.ggml.pre") v.s = argv[4];
  // pad vocab key to the token count
  for (auto& [k, v] : kv) if (k == "llama.vocab_size") v.i = (int64_t)tok[2].second.arr.size();
  out.open(argv[3], std::ios::binary);
  out.write("GGUF", 4); w<uint32_t>(3); w<uint64_t>(0); w<uint64_t>(kv.size());
  for (auto& [k, v] : kv) { ws(k); w<uint32_t>(v.gguf_type); wv(v, v.gguf_type); }
  return 0;
}

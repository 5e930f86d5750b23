// Random checkpoint + copied tokenizer files.
#include "bench/model_maker.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace plexus {

std::int64_t make_model_with_tokenizer(const std::string& out, MakeModelOptions o, const std::string& tok_dir) {
  std::unique_ptr<Tokenizer> tok;
  if (!tok_dir.empty()) {
    tok = Tokenizer::load(tok_dir);
    if (tok->bos_id()) o.bos_token_id = *tok->bos_id();
    if (tok->eos_id()) o.eos_token_id = *tok->eos_id();
    const std::int64_t tv = tok->vocab_size();
    if (o.vocab_size == 0) {
      o.vocab_size = std::max<std::int64_t>(tv, preset_config(o.preset, o.arch, 0).vocab_size);
    } else if (o.vocab_size < tv) {
      throw InputError("--vocab " + std::to_string(o.vocab_size) + " is smaller than the tokenizer's " + std::to_string(tv) + " tokens");
    }
  }
  const std::int64_t n = write_random_model(out, o);
  if (tok) {
    namespace fs = std::filesystem;
    const fs::path src = fs::is_directory(tok_dir) ? fs::path(tok_dir) : fs::path(tok_dir).parent_path();
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
      if (fs::exists(src / f)) fs::copy_file(src / f, fs::path(out) / f, fs::copy_options::overwrite_existing);
    }
    if (!fs::is_directory(tok_dir)) fs::copy_file(tok_dir, fs::path(out) / "tokenizer.json", fs::copy_options::overwrite_existing);
  }
  return n;
}

}  // namespace plexus

// Random checkpoint + copied tokenizer files.
#include "bench/model_maker.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mmap_file.h"
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
  if (tok) {  // the tokenizer first: config.json, written last, marks a finished model
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw RuntimeError("cannot create directory '" + out + "': " + ec.message());
    const fs::path src = fs::is_directory(tok_dir) ? fs::path(tok_dir) : fs::path(tok_dir).parent_path();
    // Copied atomically: an interrupt or a full disk leaves either the whole file or none.
    auto copy = [](const fs::path& from, const fs::path& to) { write_file_atomically(to.string(), read_text_file_or_empty(from.string())); };
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
      if (fs::exists(src / f)) copy(src / f, fs::path(out) / f);
    }
    if (!fs::is_directory(tok_dir)) copy(tok_dir, fs::path(out) / "tokenizer.json");
  }
  const std::int64_t n = write_random_model(out, o);
  return n;
}

}  // namespace plexus

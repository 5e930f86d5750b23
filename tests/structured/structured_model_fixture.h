// A random-weight tiny Llama with the Mistral tokenizer (32768 tokens, SentencePiece-style with
// byte fallback), loaded once per test suite, and generation under a grammar on it.
#pragma once
#include <memory>
#include <string>

#include "runtime/engine.h"
#include "runtime/generate.h"
#include "structured/grammar_cache.h"
#include "structured/vocabulary.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace plexus::structured {

struct GrammarOutput {
  std::string text;  // the bytes of the generated tokens, end-of-sequence left out
  std::string finish_reason;
};

class StructuredModel {
 public:
  StructuredModel();
  const Tokenizer& tokenizer() const { return *tok_; }
  const std::string& model_dir() const { return model_dir_; }
  const std::shared_ptr<const Vocabulary>& vocab() const { return vocab_; }
  // Sampled at temperature 1 with `seed`, at most max_tokens tokens.
  GrammarOutput generate(const std::shared_ptr<const CompiledGrammar>& g, std::uint64_t seed, std::int64_t max_tokens);
  GrammarCache& cache() { return cache_; }

 private:
  testing::TempDir dir_;
  std::string model_dir_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<const Vocabulary> vocab_;
  GrammarCache cache_;
};

}  // namespace plexus::structured

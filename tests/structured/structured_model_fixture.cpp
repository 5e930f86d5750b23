// The model is written with the tokenizer's vocabulary size; prompts are a few fixed ids.
#include "structured_model_fixture.h"

#include <filesystem>

#include "model/make_model.h"
#include "structured/token_matcher.h"

namespace plexus::structured {

StructuredModel::StructuredModel() : dir_("structured_model"), model_dir_(dir_ / "model") {
  tok_ = Tokenizer::load(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral");
  MakeModelOptions o;
  o.seed = 36;
  o.std = 0.08;
  o.vocab_size = tok_->vocab_size();
  o.eos_token_id = *tok_->eos_id();
  write_random_model(model_dir_, o);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {  // for the CLI tests
    std::filesystem::copy_file(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral/" + f, model_dir_ + "/" + f);
  }
  EngineOptions eo;
  eo.max_batch_tokens = 32;
  eo.max_context = 1024;
  eo.threads = 1;
  engine_ = std::make_unique<Engine>(model_dir_, eo);
  vocab_ = std::make_shared<const Vocabulary>(vocabulary_from_tokenizer(*tok_, engine_->vocab_size(), {*tok_->eos_id()}));
}

GrammarOutput StructuredModel::generate(const std::shared_ptr<const CompiledGrammar>& g, std::uint64_t seed, std::int64_t max_tokens) {
  GenerateOptions o;
  o.max_tokens = max_tokens;
  set_temperature(o.sampling, 1.0);
  o.sampling.seed = seed;
  o.stop_ids = {*tok_->eos_id()};
  o.constraint = [g] { return std::make_unique<TokenMatcher>(g); };
  const std::vector<std::int32_t> prompt = {1, 415, 2992, 28705};
  const GenerateResult r = plexus::generate(*engine_, prompt, o);
  GrammarOutput out;
  out.finish_reason = r.finish_reason;
  for (std::int32_t id : r.ids) {
    if (vocab_->is_eos(id)) continue;
    out.text += *vocab_->bytes(id);
  }
  return out;
}

}  // namespace plexus::structured

// tokenizer.json "post_processor": what add_special_tokens adds around one sequence
// (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void add_special_tokens(std::vector<std::int32_t>& ids) const = 0;
};

// Builds the post-processor in `spec` (null gives nullptr: nothing is added).
std::unique_ptr<PostProcessor> make_post_processor(const Json& spec, const std::string& where);

// A template "prefix $A suffix" with fixed ids, used for tokenizer_config.json's
// add_bos_token / add_eos_token on Llama-style tokenizers.
std::unique_ptr<PostProcessor> make_affix_processor(std::vector<std::int32_t> prefix, std::vector<std::int32_t> suffix);

}  // namespace plexus

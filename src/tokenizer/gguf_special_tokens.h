// Which tokens of a GGUF vocabulary llama.cpp treats as special: the token_type array as
// llama.cpp corrects it at load time by the tokens' text (control-looking tokens such as
// "<|im_end|>" or "</s>" become CONTROL even when the file says NORMAL).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/spm_model.h"

namespace plexus {

// The token ids a GGUF file names for the fill-in-the-middle roles (tokenizer.ggml.fim_pre_token_id
// ... fim_sep_token_id, and the older prefix/suffix/middle_token_id); a role the file names is
// not searched for by text.
struct GgufFimIds {
  std::optional<std::int32_t> pre, suf, mid, pad, rep, sep;
};

// Adjusts `types` (one per token of `tokens`) as llama.cpp's vocabulary loader adjusts the token
// attributes (llama.cpp src/llama-vocab.cpp, llama_vocab::impl::load, at commit 80fb11ac — the
// source benchmarks/llama_cpp builds; facts, not its code):
//  - every token whose text is on llama.cpp's end-of-generation list (<|eot_id|>, <|im_end|>,
//    <|end|>, <|endoftext|>, </s>, <eos>, <end_of_turn>, ... — docs/tokenizer.md lists them) and,
//    for each fill-in-the-middle role the file does not name by id, each token with one of that
//    role's spellings (<|fim_prefix|>, <PRE>, <|repo_name|>, <|file_sep|>, ...) becomes CONTROL
//    (a USER_DEFINED or UNKNOWN one keeps its type: llama.cpp adds the control bit, and both
//    are matched in the text already; llama.cpp takes only the first such token per role, in
//    its hash map's order, where a vocabulary has several spellings of one role — plexus takes
//    them all);
//  - <|channel|>, <|message|>, <|start|>, <|constrain|> become USER_DEFINED (gpt-oss);
//  - <|end|> becomes USER_DEFINED when <|call|> (or <|calls|>) and <|return|> (or <|flush|>) are
//    in the vocabulary too (o200k_harmony, solar-open), and </s> becomes NORMAL again when
//    <|tool_response>, gemma4's, is.
// The tokens llama.cpp then matches in the text before tokenizing are the UNKNOWN, CONTROL and
// USER_DEFINED ones.
void apply_llama_cpp_token_types(const std::vector<std::string>& tokens, std::vector<GgufTokenType>& types,
                                 const GgufFimIds& fim);

}  // namespace plexus

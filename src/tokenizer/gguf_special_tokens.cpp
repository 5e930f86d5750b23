// llama.cpp's corrections of GGUF token types by the tokens' text (see gguf_special_tokens.h).
#include "tokenizer/gguf_special_tokens.h"

#include <string_view>
#include <unordered_map>

namespace plexus {
namespace {

// The spellings llama.cpp's loader takes for an end of generation (llama-vocab.cpp at 80fb11ac).
constexpr std::string_view kEndOfGeneration[] = {
    "<|eot_id|>",      "<|im_end|>",      "<|end|>",   "<|return|>", "<|call|>",
    "<|flush|>",       "<|calls|>",       "<end_of_turn>", "<|endoftext|>", "</s>",
    "<|eom_id|>",      "<EOT>",           "_<EOT>",    "[EOT]",      "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>",  "<turn|>",    "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81" "of\xE2\x96\x81" "sentence\xEF\xBD\x9C>",  // <｜end▁of▁sentence｜>
    "[e~[",
};

// Its spellings of each fill-in-the-middle role, in GgufFimIds order.
struct FimRole {
  std::optional<std::int32_t> GgufFimIds::*id;
  std::vector<std::string_view> spellings;
};
const std::vector<FimRole>& fim_roles() {
  static const std::vector<FimRole> kRoles = {
      {&GgufFimIds::pre,
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
        "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
      {&GgufFimIds::suf,
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>", "<SUF>",
        "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
      {&GgufFimIds::mid,
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
        "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
      {&GgufFimIds::pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
      {&GgufFimIds::rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
      {&GgufFimIds::sep, {"<|file_sep|>"}},
  };
  return kRoles;
}

// Adds llama.cpp's control bit: a token it would match only as text becomes CONTROL.
void make_control(GgufTokenType& t) {
  if (t != GgufTokenType::kUnknown && t != GgufTokenType::kUserDefined) t = GgufTokenType::kControl;
}

}  // namespace

void apply_llama_cpp_token_types(const std::vector<std::string>& tokens, std::vector<GgufTokenType>& types,
                                 const GgufFimIds& fim) {
  std::unordered_map<std::string_view, std::vector<std::size_t>> ids;  // text -> its ids
  for (std::size_t i = 0; i < tokens.size(); ++i) ids[tokens[i]].push_back(i);
  const auto each = [&](std::string_view text, auto&& fn) {
    if (auto it = ids.find(text); it != ids.end())
      for (std::size_t i : it->second) fn(types[i]);
  };
  const auto has = [&](std::string_view text) { return ids.count(text) > 0; };
  for (const FimRole& role : fim_roles()) {
    if (fim.*role.id) continue;
    for (std::string_view s : role.spellings) each(s, make_control);
  }
  for (std::string_view s : kEndOfGeneration) each(s, make_control);
  for (std::string_view s : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
    each(s, [](GgufTokenType& t) { t = GgufTokenType::kUserDefined; });
  const bool call = has("<|call|>") || has("<|calls|>");
  if (call && (has("<|return|>") || has("<|flush|>"))) each("<|end|>", [](GgufTokenType& t) { t = GgufTokenType::kUserDefined; });
  if (has("<|tool_response>")) each("</s>", [](GgufTokenType& t) { t = GgufTokenType::kNormal; });
}

}  // namespace plexus

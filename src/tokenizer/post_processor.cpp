// Post-processors for a single sequence: each reduces to fixed ids before and after the text.
#include "tokenizer/post_processor.h"

#include "core/error.h"
#include "tokenizer/json_fields.h"

namespace plexus {
namespace {

class Affix : public PostProcessor {
 public:
  Affix(std::vector<std::int32_t> prefix, std::vector<std::int32_t> suffix)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  void add_special_tokens(std::vector<std::int32_t>& ids) const override {
    ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  }

 private:
  std::vector<std::int32_t> prefix_, suffix_;
};

class PostProcessorSequence : public PostProcessor {
 public:
  explicit PostProcessorSequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void add_special_tokens(std::vector<std::int32_t>& ids) const override {
    for (const auto& p : parts_) p->add_special_tokens(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

std::vector<std::int32_t> special_ids(const Json& specials, const std::string& name, const std::string& where) {
  if (!specials.is_object() || !specials.contains(name))
    throw InputError(where + ": template names special token '" + name + "' missing from special_tokens");
  const Json& ids = field_array(specials[name], "ids", where + ".special_tokens[\"" + name + "\"]");
  std::vector<std::int32_t> out;
  for (const Json& v : ids) {
    if (!v.is_number_integer()) throw InputError(where + ".special_tokens[\"" + name + "\"].ids must hold integers");
    out.push_back(v.get<std::int32_t>());
  }
  return out;
}

std::unique_ptr<PostProcessor> template_processing(const Json& spec, const std::string& where) {
  const Json& single = field_array(spec, "single", where);
  const Json specials = spec.value("special_tokens", Json::object());
  std::vector<std::int32_t> prefix, suffix;
  bool seen_sequence = false;
  for (std::size_t i = 0; i < single.size(); ++i) {
    const Json& item = single[i];
    const std::string at = where + ".single[" + std::to_string(i) + "]";
    std::string special;
    if (item.is_object() && item.contains("Sequence")) {
      seen_sequence = true;
      continue;
    } else if (item.is_object() && item.contains("SpecialToken")) {
      special = field_string(item["SpecialToken"], "id", at + ".SpecialToken");
    } else if (item.is_string()) {  // the "<s> $A" shorthand
      std::string s = item.get<std::string>();
      if (!s.empty() && s[0] == '$') {
        seen_sequence = true;
        continue;
      }
      special = s.substr(0, s.rfind(':'));
    } else {
      throw InputError(at + " must be a {\"Sequence\"} or {\"SpecialToken\"} item");
    }
    std::vector<std::int32_t> ids = special_ids(specials, special, where);
    (seen_sequence ? suffix : prefix).insert((seen_sequence ? suffix : prefix).end(), ids.begin(), ids.end());
  }
  return make_affix_processor(std::move(prefix), std::move(suffix));
}

std::int32_t pair_id(const Json& spec, const std::string& key, const std::string& where) {
  const Json& p = field(spec, key, where);
  if (!p.is_array() || p.size() != 2 || !p[1].is_number_integer())
    throw InputError(where + "." + key + " must be [token, id]");
  return p[1].get<std::int32_t>();
}

}  // namespace

std::unique_ptr<PostProcessor> make_affix_processor(std::vector<std::int32_t> prefix, std::vector<std::int32_t> suffix) {
  return std::make_unique<Affix>(std::move(prefix), std::move(suffix));
}

std::unique_ptr<PostProcessor> make_post_processor(const Json& spec, const std::string& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = field_string(spec, "type", where);
  if (type == "ByteLevel") return make_affix_processor({}, {});
  if (type == "TemplateProcessing") return template_processing(spec, where);
  if (type == "BertProcessing" || type == "RobertaProcessing")
    return make_affix_processor({pair_id(spec, "cls", where)}, {pair_id(spec, "sep", where)});
  if (type == "Sequence") {
    const Json& list = field_array(spec, "processors", where);
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto p = make_post_processor(list[i], where + ".processors[" + std::to_string(i) + "]");
      if (p) parts.push_back(std::move(p));
    }
    return std::make_unique<PostProcessorSequence>(std::move(parts));
  }
  throw InputError(where + ".type '" + type +
                   "' is not supported (supported: TemplateProcessing, ByteLevel, BertProcessing, "
                   "RobertaProcessing, Sequence)");
}

}  // namespace plexus

// The normalizers of tokenizer.json, each a small class; the factory maps "type" to a class.
#include "tokenizer/normalizer.h"

#include <vector>

#include "core/error.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace plexus {
namespace {

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(unicode::NormalForm form) : form_(form) {}
  void normalize(std::string& text) const override { text = unicode::normalize(text, form_); }

 private:
  unicode::NormalForm form_;
};

class Lowercase : public Normalizer {
 public:
  void normalize(std::string& text) const override { text = unicode::to_lower(text); }
};

class StripAccents : public Normalizer {
 public:
  void normalize(std::string& text) const override { text = unicode::strip_marks(text); }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    std::size_t b = 0, e = text.size();
    if (left_) {
      while (b < e) {
        std::size_t i = b;
        if (!unicode::is_white_space(utf8::next(text, i))) break;
        b = i;
      }
    }
    if (right_) {
      while (e > b) {
        const char32_t cp = utf8::previous(text, e);
        if (!unicode::is_white_space(cp)) break;
        std::string tmp;
        utf8::append(tmp, cp);
        e -= tmp.size();
      }
    }
    text = text.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class Replace : public Normalizer {
 public:
  Replace(std::string literal, std::unique_ptr<Regex> regex, std::string content)
      : literal_(std::move(literal)), regex_(std::move(regex)), content_(std::move(content)) {}
  void normalize(std::string& text) const override {
    std::string out;
    std::size_t last = 0;
    if (regex_) {
      std::vector<Regex::Match> matches;
      regex_->find_all(text, matches);
      if (matches.empty()) return;
      for (const auto& m : matches) {
        out.append(text, last, m.begin - last).append(content_);
        last = m.end;
      }
    } else {
      if (literal_.empty()) return;
      std::size_t pos = text.find(literal_);
      if (pos == std::string::npos) return;
      for (; pos != std::string::npos; pos = text.find(literal_, last)) {
        out.append(text, last, pos - last).append(content_);
        last = pos + literal_.size();
      }
    }
    out.append(text, last, std::string::npos);
    text.swap(out);
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  std::string content_;
};

class NormalizerSequence : public Normalizer {
 public:
  explicit NormalizerSequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(std::string& text) const override {
    for (const auto& p : parts_) p->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const Json& spec, const std::string& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = field_string(spec, "type", where);
  if (type == "NFC") return std::make_unique<UnicodeForm>(unicode::NormalForm::kNfc);
  if (type == "NFD") return std::make_unique<UnicodeForm>(unicode::NormalForm::kNfd);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(unicode::NormalForm::kNfkc);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(unicode::NormalForm::kNfkd);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Strip")
    return std::make_unique<Strip>(field_bool_or(spec, "strip_left", true, where),
                                   field_bool_or(spec, "strip_right", true, where));
  if (type == "Prepend") return std::make_unique<Prepend>(field_string(spec, "prepend", where));
  if (type == "Replace") {
    Pattern p = field_pattern(spec, "pattern", where);
    return std::make_unique<Replace>(std::move(p.literal), std::move(p.regex), field_string(spec, "content", where));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    const Json& list = field_array(spec, "normalizers", where);
    for (std::size_t i = 0; i < list.size(); ++i) {
      auto part = make_normalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]");
      if (part) parts.push_back(std::move(part));
    }
    return std::make_unique<NormalizerSequence>(std::move(parts));
  }
  throw InputError(where + ".type '" + type +
                   "' is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, "
                   "Prepend, Replace, Sequence)");
}

}  // namespace plexus

// Command-line parsing for subcommands.
#include "core/args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "core/error.h"
#include "core/nearest_name.h"

namespace plexus {

Args::Args(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

Args& Args::positional(const std::string& name, const std::string& help, bool required) {
  positionals_.push_back(Spec{name, name, help, std::nullopt, false, required, false});
  return *this;
}

Args& Args::option(const std::string& name, const std::string& metavar, const std::string& help,
                   std::optional<std::string> default_value) {
  options_.push_back(Spec{name, metavar, help, std::move(default_value), false, false, false});
  return *this;
}

Args& Args::repeatable_option(const std::string& name, const std::string& metavar, const std::string& help) {
  options_.push_back(Spec{name, metavar, help, std::nullopt, false, false, true});
  return *this;
}

Args& Args::flag(const std::string& name, const std::string& help) {
  options_.push_back(Spec{name, "", help, std::nullopt, true, false, false});
  return *this;
}

Args& Args::epilog(const std::string& text) {
  epilog_ = text;
  return *this;
}

Args& Args::alias(const std::string& short_name) {
  options_.back().alias = short_name;
  return *this;
}

Args& Args::old_name(const std::string& name) {
  options_.back().old_names.push_back(name);
  return *this;
}

Args& Args::hidden() {
  options_.back().hidden = true;
  return *this;
}

const Args::Spec* Args::find_option(const std::string& name) const {
  for (const Spec& s : options_) {
    if (s.name == name || (!s.alias.empty() && s.alias == name)) return &s;
    if (std::find(s.old_names.begin(), s.old_names.end(), name) != s.old_names.end()) return &s;
  }
  return nullptr;
}

bool Args::parse(int argc, char** argv) {
  std::vector<std::string> v;
  for (int i = 0; i < argc; ++i) v.emplace_back(argv[i]);
  return parse(v);
}

bool Args::parse(const std::vector<std::string>& args) {
  std::size_t next_positional = 0;
  const std::string usage_hint = " (see 'plexus " + command_ + " --help')";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string name = a, value;
      bool inline_value = false;
      const std::size_t eq = a.find('=');
      if (eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      const Spec* spec = find_option(name);
      if (!spec) {
        std::vector<std::string> names{"--help"};
        for (const Spec& s : options_) {
          if (!s.hidden) names.push_back(s.name);
        }
        throw InputError("unknown option '" + name + "' for '" + command_ + "'" + did_you_mean(name, names) + usage_hint);
      }
      const std::string spelled = name;
      name = spec->name;  // an alias or old spelling is read under the option's own name
      if (spec->is_flag) {
        if (inline_value) throw InputError("option '" + name + "' takes no value" + usage_hint);
        flags_set_[name]++;
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= args.size()) {
          throw InputError("option '" + name + "' needs a value (" + spec->metavar + ")" + usage_hint);
        }
        value = args[++i];
      }
      if (!spec->repeatable && given_.count(name)) {
        const std::string& before = spelled_[name];
        const std::string as = before == spelled ? "'" + name + "'"
                                                 : "'" + name + "' (as " + before + ", then as " + spelled + ")";
        throw InputError("option " + as + " given twice ('" + values_[name].back() + "', then '" + value +
                         "'): give it once" + usage_hint);
      }
      given_.insert(name);
      spelled_[name] = spelled;
      values_[name].push_back(value);
      continue;
    }
    if (next_positional >= positionals_.size()) {
      throw InputError("unexpected argument '" + a + "' for '" + command_ + "'" + usage_hint);
    }
    values_[positionals_[next_positional++].name].push_back(a);
  }
  for (std::size_t p = next_positional; p < positionals_.size(); ++p) {
    if (positionals_[p].required) {
      throw InputError("missing argument " + positionals_[p].name + " for '" + command_ + "'" + usage_hint);
    }
  }
  for (const Spec& s : options_) {
    if (!s.is_flag && s.default_value && !values_.count(s.name)) values_[s.name].push_back(*s.default_value);
  }
  return true;
}

bool Args::has(const std::string& name) const {
  return values_.count(name) > 0 || flags_set_.count(name) > 0;
}

bool Args::given(const std::string& name) const {
  return given_.count(name) > 0 || flags_set_.count(name) > 0;
}

std::string Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) {
    throw InputError("missing required option " + name + " for '" + command_ + "'");
  }
  return it->second.back();
}

std::optional<std::string> Args::get_optional(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return {};
  return it->second;
}

long long Args::get_int(const std::string& name) const {
  const std::string v = get(name);
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0) {
    throw InputError("option " + name + " expects an integer, got '" + v + "'");
  }
  return x;
}

double Args::get_double(const std::string& name) const {
  const std::string v = get(name);
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  // ERANGE on underflow (5e-324, 1e-400) still gives the nearest double, a finite one; only an
  // overflow (1e999) is not finite.
  if (v.empty() || *end != '\0' || (errno != 0 && errno != ERANGE) || !std::isfinite(x)) {
    throw InputError("option " + name + " expects a finite number, got '" + v + "'");
  }
  return x;
}

namespace {

std::string number_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

long long Args::get_int_in(const std::string& name, long long lo, long long hi) const {
  const long long v = get_int(name);
  if (v < lo || v > hi) {
    throw InputError(name + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + get(name));
  }
  return v;
}

double Args::get_double_in(const std::string& name, double lo, double hi) const {
  const double v = get_double(name);
  if (!(v >= lo && v <= hi)) {
    throw InputError(name + " must be between " + number_text(lo) + " and " + number_text(hi) + ", got " + get(name));
  }
  return v;
}

std::string Args::get_choice(const std::string& name, const std::vector<std::string>& choices) const {
  const std::string v = get(name);
  if (std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
  throw InputError(name + " must be " + join_choices(choices) + ", got '" + v + "'" + did_you_mean(v, choices));
}

namespace {
std::string reflow_text(const std::string& text);
}  // namespace

std::string Args::help() const {
  std::ostringstream o;
  o << "usage: plexus " << command_;
  for (const Spec& p : positionals_) o << (p.required ? " " : " [") << p.name << (p.required ? "" : "]");
  if (!options_.empty()) o << " [options]";
  o << "\n\n" << reflow_text(summary_) << "\n";
  if (!positionals_.empty()) {
    o << "\narguments:\n";
    for (const Spec& p : positionals_) o << "  " << p.name << "\n" << wrap_text("      " + p.help) << "\n";
  }
  o << "\noptions:\n";
  for (const Spec& s : options_) {
    if (s.hidden) continue;
    o << "  " << s.name;
    if (!s.is_flag) o << " " << s.metavar;
    if (!s.alias.empty()) o << ", " << s.alias << (s.is_flag ? "" : " " + s.metavar);
    std::string text = "      " + s.help;
    if (s.default_value) text += " (default: " + *s.default_value + ")";
    if (s.repeatable) text += " (repeatable)";
    o << "\n" << wrap_text(text) << "\n";
  }
  o << "  --help\n      show this help and exit\n";
  if (!epilog_.empty()) o << "\n" << reflow_text(epilog_) << "\n";
  return o.str();
}

namespace {

// Columns of a UTF-8 string: its characters (continuation bytes do not count).
std::size_t columns(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// The column where a table row's text starts after a gap of two spaces or more near the start
// ("  docker      Dockerfile ..."), or npos when `line` is not such a row.
std::size_t row_text_column(const std::string& line) {
  constexpr std::size_t kLabelColumns = 32;
  const std::size_t first = line.find_first_not_of(' ');
  const std::size_t gap = first == std::string::npos ? std::string::npos : line.find("  ", first);
  if (gap == std::string::npos || gap >= kLabelColumns) return std::string::npos;
  const std::size_t text = line.find_first_not_of(' ', gap);
  return text == std::string::npos ? std::string::npos : columns(std::string_view(line).substr(0, text));
}

// Where a broken line's continuation starts: under a table row's text, else under the first
// word plus `extra`.
std::size_t hanging_indent(const std::string& line, std::size_t extra) {
  const std::size_t row = row_text_column(line);
  return row != std::string::npos ? row : line.find_first_not_of(' ') + extra;
}

// `line` broken at spaces into pieces of at most `width` columns (a longer word stays whole).
std::string wrap_line(std::string line, std::size_t width, std::size_t extra_indent) {
  if (columns(line) <= width) return line;
  const std::size_t first = line.find_first_not_of(' ');
  if (first == std::string::npos) return line;
  const std::string indent(std::min(hanging_indent(line, extra_indent), width / 2), ' ');
  std::string out;
  std::size_t start = first;  // where the current line's text begins: a break never comes before it
  while (columns(line) > width) {
    // The last space within `width` columns after the text began, else the first one after.
    std::size_t cut = std::string::npos, col = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;
      if (col > width) break;
      if (line[i] == ' ' && i > start) cut = i;
      ++col;
    }
    if (cut == std::string::npos) cut = line.find(' ', start);
    if (cut == std::string::npos) break;
    std::size_t end = cut;
    while (end > 0 && line[end - 1] == ' ') --end;
    out += line.substr(0, end) + "\n";
    const std::size_t next = line.find_first_not_of(' ', cut);
    if (next == std::string::npos) return out.substr(0, out.size() - 1);
    line = indent + line.substr(next);
    start = indent.size();
  }
  return out + line;
}

// Prose (lines from column 0, up to a blank or indented line) joined into one paragraph, and a
// table row's continuation lines (indented to where the row's text starts) joined to the row;
// then every paragraph and row wrapped at kHelpWidth. Hand-broken help text reads the same at
// any width this way.
std::string reflow_text(const std::string& text) {
  std::string out, block;
  bool block_is_row = false;
  auto flush = [&] {
    if (!block.empty()) out += wrap_line(block, kHelpWidth, block_is_row ? 2 : 0) + "\n";
    block.clear();
  };
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const std::size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) {
      flush();
      if (end != text.size()) out += "\n";
    } else if (first == 0 && !block.empty() && !block_is_row) {
      block += " " + line;
    } else if (first > 0 && !block.empty() && block_is_row && first == row_text_column(block)) {
      block += " " + line.substr(first);
    } else {
      flush();
      block = line;
      block_is_row = first > 0;
    }
    if (end == text.size()) break;
  }
  flush();
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::string wrap_text(const std::string& text, std::size_t width, std::size_t extra_indent) {
  std::string out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    out += wrap_line(text.substr(at, end - at), width, extra_indent);
    if (end == text.size()) break;
    out += '\n';
    at = end + 1;
  }
  return out;
}

std::vector<long long> parse_int_list(const std::string& text, const std::string& what) {
  std::vector<long long> out;
  std::string item;
  std::stringstream ss(text);
  while (std::getline(ss, item, ',')) {
    std::size_t b = item.find_first_not_of(" \t");
    std::size_t e = item.find_last_not_of(" \t");
    if (b == std::string::npos) throw InputError(what + ": empty item in '" + text + "'");
    item = item.substr(b, e - b + 1);
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || errno != 0) throw InputError(what + ": '" + item + "' is not an integer");
    out.push_back(x);
  }
  if (out.empty()) throw InputError(what + ": empty list");
  return out;
}

void check_device_numbers(const std::vector<long long>& devices, const std::string& what) {
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] < 0 || devices[i] > kMaxDeviceNumber) {
      throw InputError(what + ": device numbers are between 0 and " + std::to_string(kMaxDeviceNumber) + ", got " +
                       std::to_string(devices[i]));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) {
        throw InputError(what + ": device " + std::to_string(devices[i]) + " is listed twice; name each device once, e.g. 0,1");
      }
    }
  }
}

std::vector<long long> parse_device_list(const std::string& text, const std::string& what) {
  std::vector<long long> out = parse_int_list(text, what);
  check_device_numbers(out, what);
  return out;
}

std::string join_choices(const std::vector<std::string>& choices) {
  std::string s;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) s += i + 1 == choices.size() ? " or " : ", ";
    s += choices[i];
  }
  return s;
}

}  // namespace plexus

// Command-line parsing for subcommands.
#include "core/args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

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

const Args::Spec* Args::find_option(const std::string& name) const {
  for (const Spec& s : options_) {
    if (s.name == name || (!s.alias.empty() && s.alias == name)) return &s;
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
        for (const Spec& s : options_) names.push_back(s.name);
        throw InputError("unknown option '" + name + "' for '" + command_ + "'" + did_you_mean(name, names) + usage_hint);
      }
      name = spec->name;  // an alias is read under the option's own name
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
        throw InputError("option '" + name + "' given twice ('" + values_[name].back() + "', then '" + value +
                         "'): give it once" + usage_hint);
      }
      given_.insert(name);
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

std::string Args::help() const {
  std::ostringstream o;
  o << "usage: plexus " << command_;
  for (const Spec& p : positionals_) o << (p.required ? " " : " [") << p.name << (p.required ? "" : "]");
  if (!options_.empty()) o << " [options]";
  o << "\n\n" << summary_ << "\n";
  if (!positionals_.empty()) {
    o << "\narguments:\n";
    for (const Spec& p : positionals_) o << "  " << p.name << "\n      " << p.help << "\n";
  }
  o << "\noptions:\n";
  for (const Spec& s : options_) {
    o << "  " << s.name;
    if (!s.is_flag) o << " " << s.metavar;
    if (!s.alias.empty()) o << ", " << s.alias << (s.is_flag ? "" : " " + s.metavar);
    o << "\n      " << s.help;
    if (s.default_value) o << " (default: " << *s.default_value << ")";
    if (s.repeatable) o << " (repeatable)";
    o << "\n";
  }
  o << "  --help\n      show this help and exit\n";
  if (!epilog_.empty()) o << "\n" << epilog_ << "\n";
  return o.str();
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

// A small command-line parser for subcommands: positionals, --options with values, flags,
// generated --help (wrapped at kHelpWidth columns), silent old spellings of options, and errors
// that name the offending argument (exit 2): unknown options (with "did you mean"), options given
// twice, values out of range, not finite or not among the choices.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace plexus {

class Args {
 public:
  Args(std::string command, std::string summary);

  // Declarations (before parse). `metavar` names the value in --help, e.g. "N".
  Args& positional(const std::string& name, const std::string& help, bool required = true);
  Args& option(const std::string& name, const std::string& metavar, const std::string& help,
               std::optional<std::string> default_value = std::nullopt);
  // An option that may be given several times (get_all returns every value); any other option
  // given twice is an error.
  Args& repeatable_option(const std::string& name, const std::string& metavar, const std::string& help);
  Args& flag(const std::string& name, const std::string& help);
  Args& epilog(const std::string& text);
  // A short name for the option declared last (`--tp` for `--tensor-parallel`): the same option,
  // read under its long name, and shown in --help.
  Args& alias(const std::string& short_name);
  // An old spelling of the option declared last (`--batch` for `--max-sequences`): accepted
  // silently and read under the option's name, but not shown in --help (docs/cli.md lists them).
  Args& old_name(const std::string& name);
  // The option declared last is accepted but not shown in --help (an old spelling whose value
  // the command translates itself).
  Args& hidden();

  // Parses argv after the subcommand name. Returns false when --help was asked for (help has
  // been printed to stdout); throws InputError on bad usage.
  bool parse(int argc, char** argv);
  bool parse(const std::vector<std::string>& args);

  bool has(const std::string& name) const;  // option given (or defaulted) / flag set / positional given
  bool given(const std::string& name) const;  // given on the command line (a default does not count)
  std::string get(const std::string& name) const;  // value; throws if absent
  std::optional<std::string> get_optional(const std::string& name) const;
  long long get_int(const std::string& name) const;     // validated integer
  double get_double(const std::string& name) const;     // validated finite number (no inf, nan)
  // The same, between lo and hi inclusive: InputError "NAME must be between LO and HI, got V".
  long long get_int_in(const std::string& name, long long lo, long long hi) const;
  double get_double_in(const std::string& name, double lo, double hi) const;
  // The value, which must be one of `choices`: InputError naming them (and the nearest one).
  std::string get_choice(const std::string& name, const std::vector<std::string>& choices) const;
  bool get_flag(const std::string& name) const { return flags_set_.count(name) > 0; }
  // Values of a repeatable option, in order.
  std::vector<std::string> get_all(const std::string& name) const;

  std::string help() const;
  const std::string& command() const { return command_; }

 private:
  struct Spec {
    std::string name, metavar, help;
    std::optional<std::string> default_value;
    bool is_flag = false;
    bool required = false;
    bool repeatable = false;
    std::string alias = {};  // another name for the option ("" for none)
    std::vector<std::string> old_names = {};  // silent old spellings
    bool hidden = false;
  };
  const Spec* find_option(const std::string& name) const;

  std::string command_, summary_, epilog_;
  std::vector<Spec> positionals_, options_;
  std::map<std::string, std::vector<std::string>> values_;
  std::map<std::string, int> flags_set_;
  std::set<std::string> given_;  // options given on the command line (defaults are not)
  std::map<std::string, std::string> spelled_;  // option name -> how the command line spelled it
};

// --help and the command list are wrapped to this many columns.
inline constexpr std::size_t kHelpWidth = 100;

// `text` with every line longer than `width` columns (UTF-8 characters) broken at spaces; a
// broken line's continuation is indented as far as its first word, plus `extra_indent`.
std::string wrap_text(const std::string& text, std::size_t width = kHelpWidth, std::size_t extra_indent = 0);

// "1,2,3" -> {1,2,3}; throws InputError naming `what` on anything else.
std::vector<long long> parse_int_list(const std::string& text, const std::string& what);

// Device numbers: each between 0 and kMaxDeviceNumber, none twice. InputError naming `what`
// (e.g. "--devices", "backend.device_ids") otherwise.
inline constexpr long long kMaxDeviceNumber = 1023;
void check_device_numbers(const std::vector<long long>& devices, const std::string& what);
// A list of device numbers ("0,1"), parsed and checked as above.
std::vector<long long> parse_device_list(const std::string& text, const std::string& what);

// "a, b or c" for messages.
std::string join_choices(const std::vector<std::string>& choices);

}  // namespace plexus

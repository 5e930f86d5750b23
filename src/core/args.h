// A small command-line parser for subcommands: positionals, --options with values, flags,
// generated --help, and errors that name the offending argument (exit 2).
#pragma once
#include <map>
#include <optional>
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
  Args& flag(const std::string& name, const std::string& help);
  Args& epilog(const std::string& text);

  // Parses argv after the subcommand name. Returns false when --help was asked for (help has
  // been printed to stdout); throws InputError on bad usage.
  bool parse(int argc, char** argv);
  bool parse(const std::vector<std::string>& args);

  bool has(const std::string& name) const;  // option given (or defaulted) / flag set / positional given
  std::string get(const std::string& name) const;  // value; throws if absent
  std::optional<std::string> get_optional(const std::string& name) const;
  long long get_int(const std::string& name) const;     // validated integer
  double get_double(const std::string& name) const;     // validated number
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
  };
  const Spec* find_option(const std::string& name) const;

  std::string command_, summary_, epilog_;
  std::vector<Spec> positionals_, options_;
  std::map<std::string, std::vector<std::string>> values_;
  std::map<std::string, int> flags_set_;
};

// "1,2,3" -> {1,2,3}; throws InputError naming `what` on anything else.
std::vector<long long> parse_int_list(const std::string& text, const std::string& what);

}  // namespace plexus

// The input lines of a `--jsonl FILE` option (see jsonl_lines.h).
#include "cli/jsonl_lines.h"

#include <fstream>
#include <iostream>

#include "core/error.h"

namespace plexus::cli {

void for_each_jsonl_line(const std::string& path,
                         const std::function<void(const std::string& line, const std::string& where)>& each) {
  std::ifstream file_in;
  std::istream* in = &std::cin;
  if (path != "-") {
    file_in.open(path, std::ios::binary);
    if (!file_in) throw InputError("--jsonl " + path + ": cannot open the file: check the path");
    in = &file_in;
  }
  std::string line;
  for (long long number = 1; std::getline(*in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines are not inputs
    each(line, path + ":" + std::to_string(number));
  }
}

}  // namespace plexus::cli

// The input lines of a `--jsonl FILE` option ('-' for stdin), shared by the commands that read one.
#pragma once
#include <functional>
#include <string>

namespace plexus::cli {

// Calls `each(line, where)` for every line of PATH that is not blank, in order; a trailing '\r'
// is dropped and `where` is "PATH:LINE" for error messages. InputError when PATH cannot be opened.
void for_each_jsonl_line(const std::string& path,
                         const std::function<void(const std::string& line, const std::string& where)>& each);

}  // namespace plexus::cli

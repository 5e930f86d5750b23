// Python's string operations the filters and methods share: strip with a character set,
// split (with and without a separator), case changes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::jinja {

// str.strip/lstrip/rstrip(chars); `chars` null: Python's whitespace.
std::string strip(const std::string& s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit); `sep` null: runs of whitespace, no empty parts. maxsplit < 0: all.
std::vector<std::string> split(const std::string& s, const std::string* sep, std::int64_t maxsplit);
std::string replace(const std::string& s, const std::string& from, const std::string& to, std::int64_t count);
std::string upper(const std::string& s);
std::string lower(const std::string& s);
// Case changes of Latin, Greek and Cyrillic letters (ß upper-cases to SS; other scripts kept).
std::string title(const std::string& s);         // jinja2's title filter: words split at whitespace - ( { [ <
std::string python_title(const std::string& s);  // str.title: words split at any uncased character
std::string capitalize(const std::string& s);  // first letter upper, the rest lower
bool is_py_space(unsigned char c);

}  // namespace plexus::jinja

// Python's string operations (see string_ops.h); case changes touch ASCII letters only.
#include "serve/jinja/string_ops.h"

namespace plexus::jinja {

bool is_py_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

std::string strip(const std::string& s, const std::string* chars, bool left, bool right) {
  auto drop = [&](unsigned char c) { return chars ? chars->find(static_cast<char>(c)) != std::string::npos : is_py_space(c); };
  std::size_t a = 0, b = s.size();
  if (left)
    while (a < b && drop(static_cast<unsigned char>(s[a]))) ++a;
  if (right)
    while (b > a && drop(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::vector<std::string> split(const std::string& s, const std::string* sep, std::int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    std::size_t pos = 0;
    while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
      const std::size_t f = s.find(*sep, pos);
      if (f == std::string::npos) break;
      out.push_back(s.substr(pos, f - pos));
      pos = f + sep->size();
    }
    out.push_back(s.substr(pos));
    return out;
  }
  std::size_t i = 0;
  while (true) {
    while (i < s.size() && is_py_space(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) >= maxsplit) {
      out.push_back(s.substr(i));  // the rest, trailing whitespace kept (as Python)
      break;
    }
    std::size_t j = i;
    while (j < s.size() && !is_py_space(static_cast<unsigned char>(s[j]))) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, std::int64_t count) {
  std::string out;
  std::int64_t done = 0;
  if (from.empty()) {
    // Python inserts `to` before every character and at the end.
    for (std::size_t i = 0; i <= s.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < s.size()) out.push_back(s[i]);
    }
    return out;
  }
  std::size_t pos = 0;
  while (count < 0 || done < count) {
    const std::size_t f = s.find(from, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += to;
    pos = f + from.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

std::string upper(const std::string& s) {
  std::string o = s;
  for (char& c : o)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  return o;
}
std::string lower(const std::string& s) {
  std::string o = s;
  for (char& c : o)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return o;
}
std::string title(const std::string& s) {
  std::string o = s;
  bool start = true;
  for (char& c : o) {
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (letter) c = start ? static_cast<char>(c & ~0x20) : static_cast<char>(c | 0x20);
    start = is_py_space(static_cast<unsigned char>(c)) || c == '-' || c == '(' || c == '[' || c == '{';
  }
  return o;
}
std::string capitalize(const std::string& s) {
  std::string o = lower(s);
  if (!o.empty() && o[0] >= 'a' && o[0] <= 'z') o[0] = static_cast<char>(o[0] - 32);
  return o;
}

}  // namespace plexus::jinja

// Docker image references parsed by their grammar (image_reference.h), with the reason a string
// is not one.
#include "deploy/image_reference.h"

#include <string_view>
#include <vector>

#include "core/error.h"
#include "deploy/escape.h"

namespace plexus::deploy {

namespace {

constexpr std::size_t kNameMax = 255;
constexpr std::size_t kTagMax = 128;

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }
bool hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool all_of(std::string_view s, bool (*ok)(char)) {
  for (char c : s) {
    if (!ok(c)) return false;
  }
  return true;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t at = s.find(sep); at != std::string_view::npos; at = s.find(sep, start)) {
    parts.push_back(s.substr(start, at - start));
    start = at + 1;
  }
  parts.push_back(s.substr(start));
  return parts;
}

// [a-z0-9]+ joined by "." | "_" | "__" | "-"+.
bool path_component(std::string_view c) {
  if (c.empty() || !lower_alnum(c.front()) || !lower_alnum(c.back())) return false;
  std::size_t i = 0;
  while (i < c.size()) {
    if (lower_alnum(c[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < c.size() && !lower_alnum(c[j])) ++j;
    const std::string_view sep = c.substr(i, j - i);
    if (!(sep == "." || sep == "_" || sep == "__" || all_of(sep, [](char x) { return x == '-'; }))) return false;
    i = j;
  }
  return true;
}

// A DNS component: [A-Za-z0-9] or [A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9].
bool domain_component(std::string_view c) {
  return !c.empty() && alnum(c.front()) && alnum(c.back()) && all_of(c, [](char x) { return alnum(x) || x == '-'; });
}

// host [":" port], host a dotted DNS name or "[IPv6]".
bool domain(std::string_view d) {
  std::string_view host = d;
  if (!d.empty() && d.front() == '[') {
    const std::size_t close = d.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view ip = d.substr(1, close - 1);
    if (ip.empty() || !all_of(ip, [](char x) { return hex_digit(x) || x == ':'; })) return false;
    host = {};
    d = d.substr(close + 1);
  } else {
    const std::size_t colon = d.find(':');
    host = d.substr(0, colon);
    d = colon == std::string_view::npos ? std::string_view() : d.substr(colon);
    for (std::string_view c : split(host, '.')) {
      if (!domain_component(c)) return false;
    }
  }
  if (d.empty()) return true;
  const std::string_view port = d.substr(1);
  return d.front() == ':' && !port.empty() && all_of(port, [](char x) { return x >= '0' && x <= '9'; });
}

std::string tag_problem(std::string_view tag) {
  const bool ok = !tag.empty() && tag.size() <= kTagMax && (alnum(tag.front()) || tag.front() == '_') &&
                  all_of(tag, [](char x) { return alnum(x) || x == '_' || x == '.' || x == '-'; });
  if (ok) return "";
  return "the tag '" + std::string(tag) + "' is not 1 to 128 of [A-Za-z0-9_.-] starting with a letter, digit or '_'";
}

std::string digest_problem(std::string_view digest) {
  const std::size_t colon = digest.find(':');
  bool ok = colon != std::string_view::npos;
  if (ok) {
    const std::string_view algorithm = digest.substr(0, colon), hex = digest.substr(colon + 1);
    // Components [A-Za-z][A-Za-z0-9]* joined by one of + . _ -
    bool start = true;
    for (char c : algorithm) {
      const bool letter = alnum(c) && !(c >= '0' && c <= '9');
      if (start) {
        ok = ok && letter;
        start = false;
      } else if (c == '+' || c == '.' || c == '_' || c == '-') {
        start = true;
      } else {
        ok = ok && alnum(c);
      }
    }
    ok = ok && !algorithm.empty() && !start && hex.size() >= 32 && all_of(hex, hex_digit);
  }
  if (ok) return "";
  return "the digest '" + std::string(digest) + "' is not ALGORITHM:HEX (e.g. sha256: and 64 hex digits; at least 32)";
}

std::string name_problem(std::string_view name) {
  if (name.size() > kNameMax) {
    return "the name is " + std::to_string(name.size()) + " characters long, at most " + std::to_string(kNameMax);
  }
  const std::vector<std::string_view> parts = split(name, '/');
  // The first component may be a registry (host[:port]) when more follow.
  const std::size_t first_path = parts.size() > 1 && domain(parts.front()) ? 1 : 0;
  for (std::size_t i = first_path; i < parts.size(); ++i) {
    if (!path_component(parts[i])) {
      return "'" + std::string(parts[i]) + "' is not a repository path component (lowercase letters and digits, " +
             "separated by '.', '_', '__' or '-'" + (i == 0 && parts.size() > 1 ? "; nor a registry host[:port]" : "") + ")";
    }
  }
  return "";
}

}  // namespace

std::string image_reference_problem(const std::string& image) {
  if (image.empty()) return "it is empty";
  for (std::size_t i = 0; i < image.size(); ++i) {
    const char c = image[i];
    if (!(alnum(c) || std::string_view("._-/:@+[]").find(c) != std::string_view::npos)) {
      return "it holds '" + one_line(image.substr(i, 1)) + "' at offset " + std::to_string(i) +
             ", which no image reference has (letters, digits and . _ - / : @ + [ ])";
    }
  }
  std::string_view rest = image;
  const std::size_t at = rest.find('@');
  if (at != std::string_view::npos) {
    if (std::string p = digest_problem(rest.substr(at + 1)); !p.empty()) return p;
    rest = rest.substr(0, at);
  }
  const std::size_t colon = rest.rfind(':');
  const std::size_t slash = rest.rfind('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    if (std::string p = tag_problem(rest.substr(colon + 1)); !p.empty()) return p;
    rest = rest.substr(0, colon);
  }
  return name_problem(rest);
}

void check_image_reference(const std::string& image) {
  const std::string problem = image_reference_problem(image);
  if (problem.empty()) return;
  throw InputError("--image '" + one_line(image) + "' is not an image reference ([REGISTRY[:PORT]/]NAME[:TAG][@DIGEST], " +
                   "e.g. registry.example.com/team/plexus:1.0): " + problem);
}

}  // namespace plexus::deploy

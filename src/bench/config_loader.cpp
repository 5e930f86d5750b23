// YAML file + --set overrides + sweep grid → one BenchConfig per point.
#include "bench/config_loader.h"

#include <fstream>
#include <map>
#include <sstream>

#include <yaml-cpp/depthguard.h>

#include "bench/config_paths.h"
#include "core/error.h"
#include "core/json.h"

namespace plexus::bench {

namespace {

struct Override {
  std::string path;
  YAML::Node value;
};

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

std::string unknown_path_message(const std::string& path) {
  std::string hint;
  if (const std::string near = nearest_key(path, known_config_paths()); !near.empty()) hint = " (did you mean '" + near + "'?)";
  return "unknown key" + hint + "; see docs/benchmarks.md for the keys";
}

// YAML keeps both values of a key written twice; a benchmark file must say each key once.
// InputError "FILE:LINE: key.path: duplicate key (first on line N)".
void check_duplicate_keys(const YAML::Node& node, const std::string& prefix, const std::string& file) {
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) check_duplicate_keys(node[i], prefix + "[" + std::to_string(i) + "]", file);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    const int line = it->first.Mark().is_null() ? 0 : it->first.Mark().line + 1;
    if (const auto seen = first_line.find(key); seen != first_line.end()) {
      throw InputError(file + ":" + std::to_string(line) + ": " + path + ": duplicate key (first on line " +
                       std::to_string(seen->second) + "); give each key once");
    }
    first_line.emplace(key, line);
    check_duplicate_keys(it->second, path, file);
  }
}

// Most nodes a configuration may reach, aliases counted each time they are used (a real one has
// a few hundred): an alias bomb is refused before anything expands it.
constexpr std::size_t kMaxYamlNodes = 100000;

// InputError naming the line when `n` nests deeper than kMaxDocumentDepth or reaches more than
// kMaxYamlNodes nodes through its aliases. Recursion depth is bounded by the depth check.
void check_yaml_size(const YAML::Node& n, const std::string& where, int depth, std::size_t& nodes) {
  const auto at = [&] { return n.Mark().is_null() ? where + ": " : where + ":" + std::to_string(n.Mark().line + 1) + ": "; };
  if (depth > kMaxDocumentDepth) {
    throw InputError(at() + "YAML nested deeper than " + std::to_string(kMaxDocumentDepth) + " levels: not a benchmark configuration");
  }
  if (++nodes > kMaxYamlNodes) {
    throw InputError(at() + "the YAML expands to more than " + std::to_string(kMaxYamlNodes) +
                     " values (aliases repeated?): not a benchmark configuration");
  }
  if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) check_yaml_size(n[i], where, depth + 1, nodes);
  } else if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      check_yaml_size(it->first, where, depth + 1, nodes);
      check_yaml_size(it->second, where, depth + 1, nodes);
    }
  }
}

YAML::Node parse_yaml(const std::string& text, const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own limit, met before ours
    throw InputError(where + ":" + std::to_string(e.mark.line + 1) + ": YAML nested deeper than " +
                     std::to_string(kMaxDocumentDepth) + " levels: not a benchmark configuration");
  } catch (const YAML::Exception& e) {  // syntax errors
    throw InputError(where + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  }
  std::size_t nodes = 0;
  check_yaml_size(root, where, 0, nodes);
  return root;
}

// Sets root[a][b]... = value, making mappings on the way. `what` prefixes errors.
void set_path(YAML::Node root, const std::string& path, const YAML::Node& value, const std::string& what) {
  const std::vector<std::string> parts = split_path(path);
  YAML::Node cur;
  cur.reset(root);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = cur[parts[i]];
    if (!next || next.IsNull()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next.reset(cur[parts[i]]);
    } else if (!next.IsMap()) {
      std::string prefix;
      for (std::size_t k = 0; k <= i; ++k) prefix += (k ? "." : "") + parts[k];
      throw InputError(what + path + ": '" + prefix + "' is not a mapping in the configuration");
    }
    cur.reset(next);
  }
  cur[parts.back()] = value;
  const std::string other = other_spelling(path);
  if (!other.empty()) cur.remove(other.substr(other.rfind('.') + 1));  // the value given replaces the file's other spelling
}

std::vector<Override> parse_sets(const std::vector<std::string>& sets) {
  std::vector<Override> out;
  for (const std::string& s : sets) {
    const std::size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError("--set '" + s + "': expected key.path=value, e.g. scenario.max_sequences=4");
    Override o;
    o.path = s.substr(0, eq);
    // "sweep.KEY.PATH=[values]" adds (or replaces) one axis of the grid.
    const bool sweep = o.path.rfind("sweep.", 0) == 0;
    const std::string key = sweep ? o.path.substr(6) : o.path;
    if (!is_known_config_path(key)) throw InputError("--set " + o.path + ": " + unknown_path_message(key));
    const std::string text = s.substr(eq + 1);
    try {
      o.value = text.empty() ? YAML::Node(std::string()) : YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw InputError("--set " + o.path + ": cannot read '" + text + "' as a YAML value: " + e.msg);
    }
    std::size_t nodes = 0;
    check_yaml_size(o.value, "--set " + o.path, 0, nodes);
    // One key under its two names (scenario.batch_size and scenario.max_sequences) would keep
    // whichever came last: refused, as the file refuses it.
    const std::string other = other_spelling(key);
    for (const Override& before : out) {
      if (!other.empty() && before.path == (sweep ? "sweep." + other : other)) {
        throw InputError("--set " + before.path + " and --set " + o.path + " set one key under its two names (" + other + ", " + key +
                         "): give one of them");
      }
    }
    out.push_back(o);
  }
  return out;
}

}  // namespace

Json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (std::size_t i = 0; i < n.size(); ++i) a.push_back(yaml_to_json(n[i]));
      return a;
    }
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (auto it = n.begin(); it != n.end(); ++it) o[it->first.Scalar()] = yaml_to_json(it->second);
      return o;
    }
    case YAML::NodeType::Scalar: break;
  }
  if (n.Tag() == "!") return n.Scalar();  // quoted: a string
  long long i = 0;
  double d = 0;
  bool b = false;
  if (YAML::convert<long long>::decode(n, i)) return i;
  if (YAML::convert<double>::decode(n, d)) return d;
  if (YAML::convert<bool>::decode(n, b)) return b;
  return n.Scalar();
}

LoadedConfig load_bench_config(const std::string& file, const std::vector<std::string>& sets) {
  std::ifstream in(file);
  if (!in) throw InputError(file + ": cannot read the benchmark configuration (no such file?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::vector<Override> overrides = parse_sets(sets);

  ConfigSource source{file, {}};
  for (const Override& o : overrides) source.overridden.push_back(o.path);

  // A fresh tree per point (marks, hence lines, survive only in trees parsed from the file).
  auto fresh_root = [&] {
    YAML::Node root = parse_yaml(text, file);
    check_duplicate_keys(root, "", file);
    if (!root || root.IsNull()) throw InputError(file + ": the configuration is empty: give at least model and scenario");
    if (!root.IsMap()) throw InputError(file + ":1: (top level): expected a mapping with name, model, backend, scenario, ...");
    for (const Override& o : overrides) {
      if (o.path.rfind("sweep.", 0) == 0) {
        if (!root["sweep"] || root["sweep"].IsNull()) root["sweep"] = YAML::Node(YAML::NodeType::Map);
        if (!root["sweep"].IsMap()) throw InputError("--set " + o.path + ": the file's sweep is not a mapping");
        const std::string key = o.path.substr(6);
        root["sweep"][key] = YAML::Clone(o.value);
        if (const std::string other = other_spelling(key); !other.empty()) root["sweep"].remove(other);  // replaces the file's axis under either name
      } else {
        set_path(root, o.path, YAML::Clone(o.value), "--set ");
      }
    }
    return root;
  };

  const YAML::Node first = fresh_root();
  LoadedConfig out;
  std::vector<std::pair<std::string, YAML::Node>> axes;
  if (const YAML::Node sweep = first["sweep"]) {
    auto line = [&](const YAML::Node& n) {
      return n.Mark().is_null() ? file + ": " : file + ":" + std::to_string(n.Mark().line + 1) + ": ";
    };
    if (!sweep.IsMap() || sweep.size() == 0) {
      throw InputError(line(sweep) + "sweep: expected a mapping of key.path to a list of values, e.g. {scenario.max_sequences: [1, 4]}");
    }
    out.sweep = Json::object();
    for (auto it = sweep.begin(); it != sweep.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (!is_known_config_path(key) || key == "name" || key.find('.') == std::string::npos) {
        throw InputError(line(it->first) + "sweep." + key + ": " +
                         (is_known_config_path(key) ? "sweep a key inside a section (e.g. scenario.max_sequences), not a whole section or the name"
                                                    : unknown_path_message(key)));
      }
      if (!it->second.IsSequence() || it->second.size() == 0) {
        throw InputError(line(it->second) + "sweep." + key + ": expected a non-empty list of values, e.g. [1, 4]");
      }
      if (const std::string other = other_spelling(key); !other.empty() && sweep[other]) {
        // Both axes would set the one key: every point would run with the later one's value.
        throw InputError(line(it->first) + "sweep." + key + " and sweep." + other + " are one key under its two names: sweep one of them");
      }
      axes.emplace_back(key, it->second);
      out.sweep[key] = yaml_to_json(it->second);
    }
  }

  // The grid's size, checked before it can overflow (8 axes of 256 values wrap a 64-bit count).
  constexpr std::size_t kMaxPoints = 10000;
  std::size_t total = 1;
  std::string shape;
  for (const auto& a : axes) {
    shape += (shape.empty() ? "" : " x ") + std::to_string(a.second.size());
    if (total > kMaxPoints / a.second.size()) {
      throw InputError(file + ": sweep: more than " + std::to_string(kMaxPoints) + " points (axes of " + shape +
                       " values so far): sweep fewer keys or values");
    }
    total *= a.second.size();
  }
  for (std::size_t p = 0; p < total; ++p) {
    YAML::Node root = p == 0 ? first : fresh_root();
    // Each point's values come from its own tree: assigning nodes of another tree merges that
    // tree's node memory into this one, and the shared memory grew with every point (quadratic:
    // 400 points took 26 s; found by fuzz/bench_yaml).
    const YAML::Node sweep = axes.empty() ? YAML::Node() : YAML::Node(root["sweep"]);
    std::vector<YAML::Node> values;
    std::size_t rest = p;
    std::vector<std::size_t> idx(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {
      idx[a] = rest % axes[a].second.size();
      rest /= axes[a].second.size();
    }
    for (std::size_t a = 0; a < axes.size(); ++a) values.push_back(sweep[axes[a].first][idx[a]]);
    root.remove("sweep");
    BenchPoint point;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      set_path(root, axes[a].first, values[a], file + ": sweep.");
      point.sweep_point[axes[a].first] = yaml_to_json(values[a]);
    }
    point.config = config_from_yaml(root, source);
    out.points.push_back(std::move(point));
  }
  return out;
}

}  // namespace plexus::bench

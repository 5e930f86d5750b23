// YAML file + --set overrides + sweep grid → one BenchConfig per point.
#include "bench/config_loader.h"

#include <fstream>
#include <map>
#include <sstream>

#include "bench/config_paths.h"
#include "core/error.h"

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

YAML::Node parse_yaml(const std::string& text, const std::string& where) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(where + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  }
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
}

std::vector<Override> parse_sets(const std::vector<std::string>& sets) {
  std::vector<Override> out;
  for (const std::string& s : sets) {
    const std::size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError("--set '" + s + "': expected key.path=value, e.g. scenario.batch_size=4");
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
        root["sweep"][o.path.substr(6)] = o.value;
      } else {
        set_path(root, o.path, o.value, "--set ");
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
      throw InputError(line(sweep) + "sweep: expected a mapping of key.path to a list of values, e.g. {scenario.batch_size: [1, 4]}");
    }
    out.sweep = Json::object();
    for (auto it = sweep.begin(); it != sweep.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (!is_known_config_path(key) || key == "name" || key.find('.') == std::string::npos) {
        throw InputError(line(it->first) + "sweep." + key + ": " +
                         (is_known_config_path(key) ? "sweep a key inside a section (e.g. scenario.batch_size), not a whole section or the name"
                                                    : unknown_path_message(key)));
      }
      if (!it->second.IsSequence() || it->second.size() == 0) {
        throw InputError(line(it->second) + "sweep." + key + ": expected a non-empty list of values, e.g. [1, 4]");
      }
      axes.emplace_back(key, it->second);
      out.sweep[key] = yaml_to_json(it->second);
    }
  }

  std::size_t total = 1;
  for (const auto& a : axes) total *= a.second.size();
  if (total > 10000) throw InputError(file + ": sweep: " + std::to_string(total) + " points is too many (at most 10000)");
  for (std::size_t p = 0; p < total; ++p) {
    YAML::Node root = p == 0 ? first : fresh_root();
    root.remove("sweep");
    BenchPoint point;
    std::size_t rest = p;
    std::vector<std::size_t> idx(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {
      idx[a] = rest % axes[a].second.size();
      rest /= axes[a].second.size();
    }
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const YAML::Node value = axes[a].second[idx[a]];
      set_path(root, axes[a].first, value, file + ": sweep.");
      point.sweep_point[axes[a].first] = yaml_to_json(value);
    }
    point.config = config_from_yaml(root, source);
    out.points.push_back(std::move(point));
  }
  return out;
}

}  // namespace plexus::bench

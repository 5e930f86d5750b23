// Left-recursion check: rules that may match the empty string, then a walk of the rules each
// rule can begin with.
#include "structured/grammar.h"

#include "core/error.h"

namespace plexus::structured {

namespace {

std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (std::uint32_t start : g.rules[r]) {
        std::size_t i = start;
        while (g.elements[i].kind == ElementKind::kRule && nullable[g.elements[i].value]) ++i;
        if (g.elements[i].kind == ElementKind::kEnd) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

}  // namespace

void check_no_left_recursion(const Grammar& g, const std::string& where) {
  const std::vector<bool> nullable = nullable_rules(g);
  // first[r]: the rules r can begin with (reached through nullable prefixes).
  std::vector<std::vector<std::uint32_t>> first(g.rules.size());
  for (std::size_t r = 0; r < g.rules.size(); ++r) {
    for (std::uint32_t start : g.rules[r]) {
      for (std::size_t i = start; g.elements[i].kind == ElementKind::kRule; ++i) {
        first[r].push_back(g.elements[i].value);
        if (!nullable[g.elements[i].value]) break;
      }
    }
  }
  // Depth-first search for a cycle: 0 unvisited, 1 on the path, 2 done.
  std::vector<int> mark(g.rules.size(), 0);
  std::vector<std::uint32_t> path;
  auto visit = [&](auto&& self, std::uint32_t r) -> void {
    mark[r] = 1;
    path.push_back(r);
    for (std::uint32_t s : first[r]) {
      if (mark[s] == 1) {
        std::string cycle;
        bool on = false;
        for (std::uint32_t p : path) {
          on = on || p == s;
          if (on) cycle += g.rule_names[p] + " -> ";
        }
        throw InputError(where + "rule '" + g.rule_names[s] + "' is left-recursive (" + cycle + g.rule_names[s] +
                         "): rewrite it so that something is matched before the rule refers to itself");
      }
      if (mark[s] == 0) self(self, s);
    }
    path.pop_back();
    mark[r] = 2;
  };
  for (std::uint32_t r = 0; r < g.rules.size(); ++r) {
    if (mark[r] == 0) visit(visit, r);
  }
}

}  // namespace plexus::structured

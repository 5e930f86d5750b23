// Edit distance and the nearest known name, for "did you mean" hints.
#include "core/nearest_name.h"

#include <algorithm>

namespace plexus {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string nearest_name(const std::string& typed, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(2, typed.size() / 3);
  std::string best;
  std::size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    if (c.find('*') != std::string::npos || c == typed) continue;
    const std::size_t d = typed.size() >= 3 && c.rfind(typed, 0) == 0 ? 1 : edit_distance(typed, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

std::string did_you_mean(const std::string& typed, const std::vector<std::string>& candidates) {
  const std::string near = nearest_name(typed, candidates);
  return near.empty() ? std::string() : " (did you mean '" + near + "'?)";
}

}  // namespace plexus

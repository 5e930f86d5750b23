// "Did you mean …?": the known name closest to what was typed, by edit distance. One helper for
// unknown commands, unknown flags, enum values and benchmark configuration keys.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace plexus {

// Levenshtein distance (insertions, deletions, substitutions) between a and b.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `typed` (at most max(2, |typed|/3) edits away; a candidate that starts
// with what was typed, 3 characters or more, counts as one edit), or "" when none is close.
// Candidates holding '*' are patterns and skipped.
std::string nearest_name(const std::string& typed, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for nearest_name's answer, or "" when there is none.
std::string did_you_mean(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace plexus

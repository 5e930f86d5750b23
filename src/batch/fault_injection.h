// Faults on purpose, for tests of retries, replica removal and crash recovery: parsed from
// PLEXUS_BATCH_FAIL ("replica=1", "id=foo", "kill_after=3", comma-separated, repeatable).
#pragma once
#include <cstdint>
#include <set>
#include <string>

namespace plexus::batch {

struct FaultInjection {
  std::set<int> replicas;          // these replicas throw on every run
  std::set<std::string> ids;       // a run holding one of these request ids throws (id as written, no quotes)
  std::int64_t kill_after = 0;     // > 0: the writer SIGKILLs itself after this many results of a run

  bool any() const { return !replicas.empty() || !ids.empty() || kill_after > 0; }
};

// InputError naming the bad entry.
FaultInjection parse_fault_injection(const std::string& spec);

// The id as the spec names it: a string id without quotes, an integer as digits.
std::string fault_id_text(const std::string& key);

}  // namespace plexus::batch

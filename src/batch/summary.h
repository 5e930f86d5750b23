// What a `plexus batch` run did: counts, throughput, per-replica work and retries; printed as
// text on stderr at the end and, with --json, as one JSON object on stdout.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace plexus::batch {

struct ReplicaCounts {
  std::int64_t done = 0;          // results committed from this replica
  std::int64_t failed_tries = 0;  // tries that failed on it
  bool taken_out = false;
  std::string out_reason;
};

struct BatchSummary {
  std::int64_t requests = 0;       // valid requests in the input
  std::int64_t done = 0;           // results written by this run
  std::int64_t resumed = 0;        // already in the output, skipped
  std::int64_t failed = 0;         // failed for good (in the errors file)
  std::int64_t skipped_lines = 0;  // bad input lines skipped
  std::int64_t retries = 0;
  std::int64_t prompt_tokens = 0, completion_tokens = 0;  // of this run's results
  double wall_s = 0;
  std::vector<ReplicaCounts> replicas;
  std::string output, errors;

  double tokens_per_s() const { return wall_s > 0 ? static_cast<double>(completion_tokens) / wall_s : 0; }
  double requests_per_s() const { return wall_s > 0 ? static_cast<double>(done) / wall_s : 0; }
};

Json summary_to_json(const BatchSummary& s);
std::string summary_to_text(const BatchSummary& s);

}  // namespace plexus::batch

// Batch run summary as JSON and as text.
#include "batch/summary.h"

#include <cstdio>

namespace plexus::batch {

Json summary_to_json(const BatchSummary& s) {
  Json replicas = Json::array();
  for (std::size_t r = 0; r < s.replicas.size(); ++r) {
    const ReplicaCounts& c = s.replicas[r];
    Json j = {{"replica", r}, {"done", c.done}, {"failed_tries", c.failed_tries}, {"taken_out", c.taken_out}};
    if (c.taken_out) j["reason"] = c.out_reason;
    replicas.push_back(j);
  }
  return {{"requests", s.requests},
          {"done", s.done},
          {"resumed", s.resumed},
          {"failed", s.failed},
          {"skipped_lines", s.skipped_lines},
          {"retries", s.retries},
          {"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.completion_tokens},
          {"wall_s", s.wall_s},
          {"tokens_per_s", s.tokens_per_s()},
          {"requests_per_s", s.requests_per_s()},
          {"replicas", replicas},
          {"output", s.output},
          {"errors", s.errors}};
}

std::string summary_to_text(const BatchSummary& s) {
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof buf, "batch: %lld requests: %lld done now, %lld resumed, %lld failed, %lld bad lines skipped\n",
                static_cast<long long>(s.requests), static_cast<long long>(s.done), static_cast<long long>(s.resumed),
                static_cast<long long>(s.failed), static_cast<long long>(s.skipped_lines));
  out += buf;
  std::snprintf(buf, sizeof buf, "  %lld tokens generated in %.2f s: %.1f tokens/s, %.2f requests/s; %lld retries\n",
                static_cast<long long>(s.completion_tokens), s.wall_s, s.tokens_per_s(), s.requests_per_s(),
                static_cast<long long>(s.retries));
  out += buf;
  for (std::size_t r = 0; r < s.replicas.size(); ++r) {
    const ReplicaCounts& c = s.replicas[r];
    std::snprintf(buf, sizeof buf, "  replica %zu: %lld done, %lld failed tries%s%s\n", r, static_cast<long long>(c.done),
                  static_cast<long long>(c.failed_tries), c.taken_out ? ", taken out: " : "", c.out_reason.c_str());
    out += buf;
  }
  out += "  output: " + s.output + "\n";
  if (s.failed > 0 || s.skipped_lines > 0) out += "  errors: " + s.errors + "\n";
  return out;
}

}  // namespace plexus::batch

// The progress bar (drawn only when enabled, i.e. on a terminal) and the summary's JSON keys.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "batch/progress.h"
#include "batch/summary.h"

namespace plexus::batch {
namespace {

std::string drawn(bool enabled) {
  std::FILE* f = std::tmpfile();
  {
    Progress p(enabled, 10, f);
    p.update(3, 1, 120);
    p.update(10, 0, 400);
    p.finish();
  }
  std::rewind(f);
  std::string out;
  for (int c; (c = std::fgetc(f)) != EOF;) out += static_cast<char>(c);
  std::fclose(f);
  return out;
}

TEST(BatchProgress, DrawsDoneOverTotalRateAndEtaOnlyWhenEnabled) {
  const std::string out = drawn(true);
  EXPECT_NE(out.find("4/10 (1 failed)"), std::string::npos) << out;
  EXPECT_NE(out.find("tok/s"), std::string::npos);
  EXPECT_NE(out.find("ETA"), std::string::npos);
  EXPECT_NE(out.find("10/10"), std::string::npos) << out;  // the last update is always drawn
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(drawn(false), "");
}

TEST(BatchSummary, JsonHasEveryCount) {
  BatchSummary s;
  s.requests = 5, s.done = 3, s.resumed = 1, s.failed = 1, s.completion_tokens = 30, s.wall_s = 2;
  s.replicas.resize(2);
  s.replicas[1].taken_out = true;
  s.replicas[1].out_reason = "broken";
  const Json j = summary_to_json(s);
  for (const char* k : {"requests", "done", "resumed", "failed", "skipped_lines", "retries", "prompt_tokens",
                        "completion_tokens", "wall_s", "tokens_per_s", "requests_per_s", "replicas", "output", "errors"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_DOUBLE_EQ(j["tokens_per_s"].get<double>(), 15.0);
  EXPECT_EQ(j["replicas"][1]["reason"], Json("broken"));
  EXPECT_NE(summary_to_text(s).find("replica 1: 0 done, 0 failed tries, taken out: broken"), std::string::npos);
}

}  // namespace
}  // namespace plexus::batch

// Reference NLLs of checkpoints written by tests/tools/mkmodel.py (not by plexus), from an
// established float64 implementation: within 2e-3 per token and the same greedy tokens.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/json.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

TEST(GoldenLogits, MatchEveryCase) {
  const std::string cases = std::string(PLEXUS_GOLDEN_DIR) + "/logits/cases.jsonl";
  std::ifstream in(cases);
  ASSERT_TRUE(in) << "missing " << cases;
  std::string line;
  int n_cases = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    const Json& m = c["make"];
    SCOPED_TRACE(c["name"].get<std::string>());
    testing::TempDir dir("golden");
    const std::string cmd = "/usr/bin/python3 " + testing::shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/tools/mkmodel.py") +
                            " " + testing::shell_quote(dir.path()) + " --preset " + m["preset"].get<std::string>() +
                            " --arch " + m["arch"].get<std::string>() + " --dtype " + m["dtype"].get<std::string>() +
                            " --seed " + std::to_string(m["seed"].get<int>()) + " --std " + std::to_string(m["std"].get<double>()) +
                            " --vocab " + std::to_string(m["vocab"].get<int>()) + " >/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "mkmodel.py failed (needs python3-numpy: run scripts/setup.sh): " << cmd;
    const std::vector<std::int32_t> ids = c["ids"].get<std::vector<std::int32_t>>();
    Engine engine(dir.path(), EngineOptions{});
    const PerplexityResult r = perplexity(engine, ids);
    const std::vector<double> want = c["nll"].get<std::vector<double>>();
    ASSERT_EQ(r.nll.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(r.nll[i], want[i], 2e-3) << "token " << i;
    EXPECT_NEAR(r.ppl, c["ppl"].get<double>(), 2e-3 * c["ppl"].get<double>());
    GenerateOptions g;
    g.max_tokens = static_cast<std::int64_t>(c["greedy"].size());
    const GenerateResult gr = generate(engine, ids, g);
    EXPECT_EQ(gr.ids, c["greedy"].get<std::vector<std::int32_t>>());
    ++n_cases;
  }
  EXPECT_GE(n_cases, 3);
}

}  // namespace
}  // namespace plexus

// `generate` / `perplexity` across virtual devices through the real binary: same ids and NLL as
// one device, the plan with --verbose, execution stats in JSON, a custom --device-map.
#include <gtest/gtest.h>

#include <fstream>

#include "core/json.h"
#include "model/make_model.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::run_plexus;
using testing::shell_quote;
using testing::TempDir;

class ExecCli : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeModelOptions o;
    o.seed = 5;
    o.std = 0.08;
    o.vocab_size = 1500;
    write_random_model(dir_.path(), o);
  }
  Json run_json(const std::string& args) {
    const testing::ProcessResult r = run_plexus(args + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out);
  }
  std::string model() const { return shell_quote(dir_.path()); }
  TempDir dir_{"exec_cli"};
};

TEST_F(ExecCli, GenerateAndPerplexityMatchOneDevice) {
  const std::string gen = "generate " + model() + " --ids 3,14,15,92,65 --max-tokens 6 --threads 2";
  const Json one = run_json(gen);
  const Json four = run_json(gen + " --virtual-devices 4 --strategy balanced");
  EXPECT_EQ(one["ids"], four["ids"]);
  EXPECT_FALSE(one.contains("execution"));
  ASSERT_TRUE(four.contains("execution"));
  EXPECT_GE(four["execution"]["stages"].get<int>(), 2);
  EXPECT_TRUE(four["execution"]["devices"][0].contains("busy_fraction"));
  EXPECT_TRUE(four["execution"]["devices"][0].contains("peak_bytes"));

  const std::string ppl = "perplexity " + model() + " --ids 3,14,15,92,65,35,89,79,32,38 --batch-tokens 4";
  EXPECT_EQ(run_json(ppl)["nll"], run_json(ppl + " --virtual-devices 2 --micro-batches 3")["nll"]);
}

TEST_F(ExecCli, DeviceMapFileWithOffloadAndVerbosePlan) {
  const std::string map = dir_ / "map.json";
  std::ofstream(map) << R"({"model.embed_tokens": 0, "model.layers.0": 0, "model.layers.1": "cpu", "model.layers.2": 1, "model.layers.3": 1, "model.norm": 1, "lm_head": "disk"})";
  const std::string gen = "generate " + model() + " --ids 7,8,9 --max-tokens 4";
  const testing::ProcessResult r = run_plexus(gen + " --max-memory 0=64MiB,1=64MiB,cpu=64MiB --offload-disk --device-map " + shell_quote(map) + " --verbose --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["ids"], run_json(gen)["ids"]);
  EXPECT_NE(r.err.find("stage 0  device 0: embedding, layers 0-1 (1 streamed from cpu/disk)"), std::string::npos) << r.err;
  EXPECT_GT(Json::parse(r.out)["execution"]["streamed_bytes"].get<std::int64_t>(), 0);
}

TEST_F(ExecCli, BatchOfPromptsPipelines) {
  const Json j = run_json("generate " + model() + " --ids 1,2,3 --max-tokens 5 --virtual-devices 2 --batch 4");
  ASSERT_EQ(j["sequences"].size(), 4u);
  for (const Json& s : j["sequences"]) EXPECT_EQ(s["ids"], j["sequences"][0]["ids"]);
  EXPECT_EQ(j["execution"]["micro_batches"].get<int>(), 2);
}

TEST_F(ExecCli, MapNamingAMissingDeviceIsBadInput) {
  const std::string map = dir_ / "map.json";
  std::ofstream(map) << R"({"": 3})";
  const testing::ProcessResult r = run_plexus("generate " + model() + " --ids 1,2 --virtual-devices 2 --device-map " + shell_quote(map));
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

}  // namespace
}  // namespace plexus

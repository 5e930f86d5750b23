// The GGUF files llama.cpp quantised, run by plexus: NLLs against the float64 forward of their
// exactly dequantised weights, the CLI on a .gguf path, several devices, malformed files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "core/json.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "test_util.h"

namespace plexus {
namespace {

std::string gguf_path(const std::string& name) { return std::string(PLEXUS_SOURCE_DIR) + "/tests/data/gguf/" + name; }

std::vector<Json> cases() { return testing::read_jsonl(gguf_path("cases.jsonl")); }

// The label model: every golden file's NLLs against the float64 forward of its weights
// dequantised exactly (llama.cpp itself is off by up to 0.047 per token).
TEST(GgufGolden, NllMatchesTheDequantisedFloat64Forward) {
  const std::vector<Json> all = cases();
  ASSERT_EQ(all.size(), 3u);
  for (const Json& c : all) {
    const std::string file = c["file"].get<std::string>();
    SCOPED_TRACE(file);
    Engine engine(gguf_path(file), EngineOptions{});
    const std::vector<std::int32_t> ids = c["ids"].get<std::vector<std::int32_t>>();
    const PerplexityResult r = perplexity(engine, ids);
    const std::vector<double> want = c["dequant_f64_nll"].get<std::vector<double>>();
    ASSERT_EQ(r.nll.size(), want.size());
    double sum = 0, worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double d = std::abs(r.nll[i] - want[i]);
      EXPECT_LE(d, 0.12) << "token " << i;
      sum += d;
      worst = std::max(worst, d);
    }
    EXPECT_LE(sum / static_cast<double>(want.size()), 0.03);
    std::printf("%s: mean |nll - dequant_f64_nll| %.2e, max %.2e\n", file.c_str(), sum / static_cast<double>(want.size()), worst);
  }
}

TEST(GgufCli, PerplexityOfAGgufFile) {
  const Json c = cases()[0];
  const auto ids = c["ids"].get<std::vector<std::int32_t>>();
  const testing::ProcessResult r = testing::run_plexus("perplexity " + testing::shell_quote(gguf_path(c["file"].get<std::string>())) +
                                                       " --ids " + testing::ids_csv(ids) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  const auto nll = j["nll"].get<std::vector<double>>();
  const auto want = c["dequant_f64_nll"].get<std::vector<double>>();
  ASSERT_EQ(nll.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(nll[i], want[i], 0.12) << "token " << i;
}

TEST(GgufCli, TwoVirtualDevicesAndDiskOffloadGenerateTheSameTokensAsOne) {
  const std::string model = testing::shell_quote(gguf_path("gs-llama-q4_k_m.gguf"));
  const std::string common = "generate " + model + " --ids 1,1046,1468,118 --max-tokens 12 --json";
  const testing::ProcessResult one = testing::run_plexus(common);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const testing::ProcessResult two = testing::run_plexus(common + " --virtual-devices 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto a = Json::parse(one.out)["ids"].get<std::vector<std::int32_t>>();
  const auto b = Json::parse(two.out)["ids"].get<std::vector<std::int32_t>>();
  EXPECT_EQ(a.size(), 12u);
  EXPECT_EQ(a, b);
  // Every layer offloaded to disk and streamed through device 0 (the weights read from the mmap).
  const testing::ProcessResult streamed =
      testing::run_plexus(common + " --context 64 --batch-tokens 16 --max-memory 0=3MiB,disk=1GiB");
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(Json::parse(streamed.out)["ids"].get<std::vector<std::int32_t>>(), a);
}

TEST(GgufCli, PlanEstimateAndBenchTakeAGgufFile) {
  const std::string model = gguf_path("gs-llama-q4_0.gguf");
  testing::ProcessResult r = testing::run_plexus("estimate " + testing::shell_quote(model));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("LlamaForCausalLM"), std::string::npos) << r.out;
  r = testing::run_plexus("plan " + testing::shell_quote(model) + " --virtual-devices 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::TempDir dir("gguf_bench");
  const std::string cfg = dir / "g.yaml";
  std::ofstream(cfg) << "name: g\nmodel: " << model << "\nbackend: {virtual_devices: 2}\n"
                     << "scenario: {prompts_ids: [[1, 1046, 1468]], num_samples: 2, max_new_tokens: 3}\n"
                     << "output: {dir: " << dir.path() << "}\n";
  r = testing::run_plexus("bench " + testing::shell_quote(cfg) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream json(dir / "g.json");
  EXPECT_TRUE(json.good());
}

TEST(GgufCli, ATruncatedFileIsABadInputNamingOffsetAndField) {
  testing::TempDir dir("gguf_cut");
  std::ifstream in(gguf_path("gs-llama-q8_0.gguf"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = dir / "cut.gguf";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  testing::ProcessResult r = testing::run_plexus("generate " + testing::shell_quote(cut) + " --ids 1,2,3 --max-tokens 2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cut.gguf: offset "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("data: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run past the end of the file"), std::string::npos) << r.err;

  // A corrupt header field: the tensor count.
  std::string bad = bytes;
  bad[8] = '\xff';
  bad[15] = '\x7f';
  const std::string corrupt = dir / "corrupt.gguf";
  std::ofstream(corrupt, std::ios::binary) << bad;
  r = testing::run_plexus("generate " + testing::shell_quote(corrupt) + " --ids 1,2,3 --max-tokens 2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("corrupt.gguf: offset 8: tensor_count: "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace plexus

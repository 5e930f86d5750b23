// "Memory estimate within 10 % of the measured peak": real `plexus train` runs report their peak
// resident memory above the RSS at the run's start (the high-water mark reset there, so the
// binary's own start-up does not count) beside train/training_memory's estimate of the process,
// for an activation-heavy tiny model and the weight-heavy `small` shape. Label slow.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "core/json.h"
#include "model/config.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::shell_quote;

struct Case {
  std::string make_model;  // make-model flags after DIR
  std::int64_t batch, seq_len;
  int replicas = 1;  // in-process replicas, with --zero 1 when more than one
};

void check(const Case& c, const std::string& tag) {
  testing::TempDir dir(tag);
  const std::string model = dir / "model", data = dir / "data.jsonl";
  ASSERT_EQ(testing::run_plexus("make-model " + shell_quote(model) + " " + c.make_model).exit_code, 0);
  const ModelConfig config = load_model_config(model);
  {
    std::ofstream f(data);
    for (int i = 0; i < 2 * c.batch; ++i) {
      Json line;
      line["ids"] = testing::some_ids(static_cast<int>(c.seq_len), config.vocab_size, i);
      f << line.dump() << "\n";
    }
  }
  const testing::ProcessResult r = testing::run_plexus(
      "train " + shell_quote(model) + " --data " + shell_quote(data) + " --out " + shell_quote(dir / "out") +
      " --steps 2 --json --batch-size " + std::to_string(c.batch) + " --seq-len " + std::to_string(c.seq_len) +
      (c.replicas > 1 ? " --zero 1 --replicas " + std::to_string(c.replicas) : ""));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json memory = Json::parse(r.out).at("memory");
  if (memory.at("measured_peak_bytes").is_null()) GTEST_SKIP() << "/proc cannot reset or report the peak RSS here";
  const auto estimate = memory.at("estimated_peak_bytes").get<double>();
  const auto measured = memory.at("measured_peak_bytes").get<double>();
  std::printf("%s: measured peak %.1f MiB, estimate %.1f MiB (%+.1f%%)\n", tag.c_str(), measured / (1 << 20),
              estimate / (1 << 20), 100.0 * (estimate - measured) / measured);
  EXPECT_LE(std::fabs(estimate - measured), 0.10 * measured)
      << tag << ": estimate " << estimate << " bytes, measured " << measured << " bytes above the start";
}

// Activations dominate: 16 sequences of 256 tokens through a 4-layer model of hidden 64.
TEST(TrainMemoryCheck, TinyModelLargeBatch) {
  check({"--preset tiny --dtype f32 --vocab 300", 16, 256}, "train_memory_tiny");
}

// Two in-process replicas with ZeRO-1: each its own weights, gradients, activations and moment
// shards, the group's all-reduce scratch.
TEST(TrainMemoryCheck, TinyModelTwoReplicasZero1) {
  check({"--preset tiny --dtype f32 --vocab 300", 16, 256, 2}, "train_memory_tiny_r2");
}

// Weights, gradients and AdamW dominate: make-model's `small` shape (125M parameters), 2 sequences of 64 tokens.
TEST(TrainMemoryCheck, SmallPreset125M) {
  check({"--preset small --dtype f32", 2, 64}, "train_memory_small");
}

}  // namespace
}  // namespace plexus

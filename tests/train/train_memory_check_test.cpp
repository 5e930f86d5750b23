// "Memory estimate within 10 % of the measured peak": real `plexus train` runs, their peak RSS
// (the child's ru_maxrss from wait4) less the binary's own baseline (the peak of `plexus estimate`
// on the same model: code, libraries, config), against train/training_memory's process estimate,
// for an activation-heavy tiny model and the weight-heavy `small` shape. Label slow.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/json.h"
#include "model/config.h"
#include "test_util.h"
#include "train/training_memory.h"

namespace plexus {
namespace {

using testing::shell_quote;

// Runs `sh -c command` (output discarded) and returns the largest resident set of it and its
// children in bytes, or -1 when it did not exit 0.
std::int64_t peak_rss_of(const std::string& command) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string quiet = "exec env CUDA_VISIBLE_DEVICES= " + command + " >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", quiet.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) return -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
}

const std::string kPlexus = shell_quote(PLEXUS_BINARY);

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
  TrainingShape shape;
  shape.micro_batch = c.batch / c.replicas;
  shape.seq_len = c.seq_len;
  shape.replicas = c.replicas;
  shape.zero1 = c.replicas > 1;
  std::int64_t checkpoint_bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(model)) {
    if (e.path().extension() == ".safetensors") checkpoint_bytes += static_cast<std::int64_t>(e.file_size());
  }
  const std::int64_t estimate = process_memory(config, shape, c.replicas, checkpoint_bytes).total();

  const std::int64_t baseline = peak_rss_of(kPlexus + " estimate " + shell_quote(model) + " --training");
  const std::int64_t peak = peak_rss_of(kPlexus + " train " + shell_quote(model) + " --data " + shell_quote(data) +
                                        " --out " + shell_quote(dir / "out") + " --steps 2 --batch-size " +
                                        std::to_string(c.batch) + " --seq-len " + std::to_string(c.seq_len) +
                                        (c.replicas > 1 ? " --zero 1 --replicas " + std::to_string(c.replicas) : ""));
  ASSERT_GT(baseline, 0);
  ASSERT_GT(peak, 0);
  const double measured = static_cast<double>(peak - baseline);
  std::printf("%s: peak RSS %.1f MiB, baseline %.1f MiB, measured %.1f MiB, estimate %.1f MiB (%+.1f%%)\n",
              tag.c_str(), static_cast<double>(peak) / (1 << 20), static_cast<double>(baseline) / (1 << 20),
              measured / (1 << 20), static_cast<double>(estimate) / (1 << 20),
              100.0 * (static_cast<double>(estimate) - measured) / measured);
  EXPECT_LE(std::fabs(static_cast<double>(estimate) - measured), 0.10 * measured)
      << tag << ": estimate " << estimate << " bytes, measured " << measured << " bytes above the baseline";
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

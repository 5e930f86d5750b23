// The training loop around the step, with a stand-in replica (a deterministic AdamW-like update):
// checkpoints (atomic, newest two kept, checked on resume), a resumed run ending bit-identical to
// an uninterrupted one, skipped steps and --max-skipped, the --out checks and the trained model.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "comm/in_process_group.h"
#include "core/error.h"
#include "model/checkpoint.h"
#include "train/train_output.h"
#include "test_util.h"

namespace plexus {
namespace {

namespace fs = std::filesystem;

// A deterministic stand-in for ReplicaTrainer: a gradient from the weights and the tokens, an
// AdamW-like update, skipped when the norm is not finite.
class FakeReplica : public TrainReplica {
 public:
  explicit FakeReplica(std::vector<float> params) : p_(std::move(params)) {
    s_.exp_avg.assign(p_.size(), 0.0f);
    s_.exp_avg_sq.assign(p_.size(), 0.0f);
  }
  StepResult step(std::span<const std::int32_t> tokens, std::int64_t T) override {
    double t = 0;
    for (std::int32_t x : tokens) t += x;
    std::vector<float> g(p_.size());
    double norm = 0;
    for (std::size_t i = 0; i < p_.size(); ++i) {
      g[i] = 0.01f * std::sin(3.0f * p_[i] + static_cast<float>(t * 1e-3) + static_cast<float>(i % 97) * 1e-2f);
      norm += static_cast<double>(g[i]) * g[i];
    }
    StepResult r;
    r.grad_norm = std::sqrt(norm);
    r.loss = t / static_cast<double>(tokens.size());
    r.tokens = static_cast<std::int64_t>(tokens.size());
    r.seconds = 1e-3;
    (void)T;
    if (!std::isfinite(r.grad_norm)) {
      r.skipped = true;
      return r;
    }
    ++s_.step;
    for (std::size_t i = 0; i < p_.size(); ++i) {
      s_.exp_avg[i] = 0.9f * s_.exp_avg[i] + 0.1f * g[i];
      s_.exp_avg_sq[i] = 0.999f * s_.exp_avg_sq[i] + 0.001f * g[i] * g[i];
      p_[i] -= 1e-3f * s_.exp_avg[i] / (std::sqrt(s_.exp_avg_sq[i]) + 1e-8f);
    }
    return r;
  }
  std::span<const float> params() const override { return p_; }
  OptimizerState optimizer_state() override { return s_; }
  void restore(std::span<const float> params, const OptimizerState& state) override {
    p_.assign(params.begin(), params.end());
    s_ = state;
  }
  CommStats comm_stats() const override { return {}; }

 private:
  std::vector<float> p_;
  OptimizerState s_;
};

class Trainer : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = dir_ / "model";
    ASSERT_EQ(testing::run_plexus("make-model " + model_ + " --preset tiny --vocab 300 --dtype f32").exit_code, 0);
    std::ofstream data(dir_ / "data.jsonl");
    for (int i = 0; i < 7; ++i) {
      data << "{\"ids\": [";
      for (int t = 0; t < 8; ++t) data << (t ? ", " : "") << (i * 31 + t * 7) % 300;
      data << "]}\n";
    }
    data.close();
    data_ = read_train_data(dir_ / "data.jsonl", 300, 0);
    config_ = load_model_config(model_);
  }

  TrainSetup setup(const std::string& out, std::int64_t steps, bool resume = false) {
    TrainSetup s;
    s.options.out = out;
    s.options.steps = steps;
    s.options.batch.global_batch = 2;
    s.options.batch.micro_batch = 2;
    s.options.checkpoint_every = 2;
    s.options.resume = resume;
    s.data = &data_;
    s.config = config_;
    s.layout = ParamLayout::of(config_);
    s.model_dir = model_;
    s.model_fingerprint = model_fingerprint(s.config, s.layout);
    s.run_fingerprint = run_fingerprint(s.options, data_);
    return s;
  }
  std::vector<float> initial(const ParamLayout& layout) {
    std::vector<float> p(static_cast<std::size_t>(layout.total()));
    load_params(Checkpoint(model_), layout, p);
    return p;
  }
  // Runs a fresh run (or a resume) to `steps`; the report.
  TrainReport run(TrainSetup s) {
    check_out_dir(s.options.out, s.config, s.options.resume);
    FakeReplica replica(initial(s.layout));
    if (s.options.resume) {
      LoadedCheckpoint c = load_newest_checkpoint(s.options.out, s.model_fingerprint, s.run_fingerprint, s.layout);
      s.start = c.progress;
      replica.restore(c.params, c.state);
    }
    InProcessGroup group(1);
    return train_rank(s, replica, group.rank(0));
  }
  std::string bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  testing::TempDir dir_{"trainer"};
  std::string model_;
  TrainData data_;
  ModelConfig config_;
};

TEST_F(Trainer, ResumedRunEndsBitIdenticalAndKeepsTwoCheckpoints) {
  const TrainReport full = run(setup(dir_ / "full", 7));
  ASSERT_EQ(full.steps.size(), 7u);
  EXPECT_EQ(full.steps.front().step, 1);
  EXPECT_EQ(full.end.step, 7);
  // Checkpoints at 2, 4, 6 and the end (7): the newest two stay.
  EXPECT_FALSE(fs::exists(checkpoint_dir(dir_ / "full", 4)));
  EXPECT_TRUE(fs::exists(checkpoint_dir(dir_ / "full", 6) + "/state.json"));
  EXPECT_TRUE(fs::exists(checkpoint_dir(dir_ / "full", 7) + "/exp_avg_sq.safetensors"));
  const std::string final_model = bytes(dir_ / "full/model.safetensors");
  ASSERT_FALSE(final_model.empty());

  // 3 steps, then resume to 7 from the checkpoint of step 3.
  const TrainReport first = run(setup(dir_ / "split", 3));
  EXPECT_EQ(first.last_checkpoint, checkpoint_dir(dir_ / "split", 3));
  const TrainReport second = run(setup(dir_ / "split", 7, true));
  ASSERT_EQ(second.steps.size(), 4u);
  EXPECT_EQ(second.steps.front().step, 4);
  EXPECT_EQ(second.steps.back().loss, full.steps.back().loss);
  EXPECT_EQ(bytes(dir_ / "split/model.safetensors"), final_model);
  EXPECT_EQ(bytes(checkpoint_dir(dir_ / "split", 7) + "/exp_avg.safetensors"),
            bytes(checkpoint_dir(dir_ / "full", 7) + "/exp_avg.safetensors"));

  // A torn checkpoint (a temporary directory of a killed write) is ignored and cleaned up.
  fs::create_directories(dir_ / "split/checkpoints/.tmp-step-000009-1");
  std::ofstream(dir_ / "split/checkpoints/.tmp-step-000009-1/model.safetensors") << "half";
  const TrainReport again = run(setup(dir_ / "split", 8, true));
  EXPECT_EQ(again.steps.size(), 1u);
  EXPECT_FALSE(fs::exists(dir_ / "split/checkpoints/.tmp-step-000009-1"));
}

TEST_F(Trainer, OutAndResumeErrorsNameThePath) {
  const std::string out = dir_ / "out";
  run(setup(out, 2));
  // Checkpoints there and no --resume: nothing is touched.
  try {
    run(setup(out, 4));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(out + "/checkpoints/step-000002"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("pass --resume"), std::string::npos) << e.what();
  }
  // Another option the bits depend on.
  TrainSetup lr = setup(out, 4, true);
  lr.options.optimizer.lr = 2e-3;
  lr.run_fingerprint = run_fingerprint(lr.options, data_);
  try {
    run(lr);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(checkpoint_dir(out, 2) + " was written with lr 0.001"), std::string::npos) << e.what();
  }
  // No checkpoint.
  try {
    run(setup(dir_ / "empty", 2, true));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no checkpoint in " + (dir_ / "empty") + "/checkpoints"), std::string::npos) << e.what();
  }
  // Another model: an --out whose config.json has another geometry, and a checkpoint of another model.
  ModelConfig other = config_;
  other.vocab_size = 301;
  try {
    check_out_dir(out, other, true);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(out + "/config.json: vocab_size 300 instead of 301"), std::string::npos) << e.what();
  }
  TrainSetup s = setup(out, 4, true);
  s.model_fingerprint["rope_theta"] = 1.0;
  try {
    load_newest_checkpoint(out, s.model_fingerprint, s.run_fingerprint, s.layout);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(checkpoint_dir(out, 2) + " is a checkpoint of another model (rope_theta"),
              std::string::npos) << e.what();
  }
}

TEST_F(Trainer, NonFiniteStepsAreSkippedAndMaxSkippedStopsWithACheckpoint) {
  TrainSetup s = setup(dir_ / "nan", 6);
  s.faults = parse_train_faults("nan_steps=2-3");
  const TrainReport r = run(s);
  ASSERT_EQ(r.steps.size(), 6u);
  EXPECT_FALSE(r.steps[0].skipped);
  EXPECT_TRUE(r.steps[1].skipped);
  EXPECT_TRUE(r.steps[2].skipped);
  EXPECT_FALSE(r.steps[3].skipped);
  EXPECT_EQ(r.end.skipped_total, 2);
  const Json j = train_report_to_json(r);
  EXPECT_EQ(j["skipped_steps"], Json(2));
  EXPECT_TRUE(j["steps"][1]["grad_norm"].is_null());
  // The skipped steps left the weights finite (the poisoned weight was taken out again).
  std::vector<float> after(static_cast<std::size_t>(s.layout.total()));
  read_params_safetensors(dir_ / "nan/model.safetensors", s.layout, after);
  for (float v : after) ASSERT_TRUE(std::isfinite(v));

  TrainSetup stop = setup(dir_ / "stop", 6);
  stop.options.max_skipped = 2;
  stop.faults = parse_train_faults("nan_steps=3-6");
  const TrainReport rs = run(stop);
  EXPECT_TRUE(rs.stopped_for_skips);
  EXPECT_EQ(rs.steps.size(), 4u);
  EXPECT_EQ(rs.last_checkpoint, checkpoint_dir(dir_ / "stop", 4));
  EXPECT_TRUE(fs::exists(checkpoint_dir(dir_ / "stop", 4) + "/state.json"));
  EXPECT_FALSE(fs::exists(dir_ / "stop/model.safetensors"));
  const Json state = read_json_file(checkpoint_dir(dir_ / "stop", 4) + "/state.json");
  EXPECT_EQ(state["skipped_consecutive"], Json(2));
  EXPECT_EQ(state["step"], Json(4));
  EXPECT_EQ(state["data_position"]["next_sequence"], Json(1));  // 4 steps · 2 = 8 lines of 7

  EXPECT_THROW(parse_train_faults("explode=1"), InputError);
  EXPECT_THROW(parse_train_faults("kill_at_step=x"), InputError);
  EXPECT_EQ(parse_train_faults("kill_at_step=3,nan_steps=4").nan_last, 4);
}

TEST_F(Trainer, TrainedModelIsAHuggingFaceF32Checkpoint) {
  const ParamLayout layout = ParamLayout::of(config_);
  std::vector<float> p = initial(layout);
  p[5] = 1.25f;
  const std::string out = dir_ / "trained";
  fs::create_directories(out);
  write_trained_model(out, model_, config_, layout, p);
  const Json cfg = read_json_file(out + "/config.json");
  EXPECT_EQ(cfg["torch_dtype"], Json("float32"));
  EXPECT_EQ(cfg["hidden_size"], Json(config_.hidden_size));
  std::vector<float> back(p.size());
  load_params(Checkpoint(out), layout, back);
  EXPECT_EQ(back, p);
  const SafetensorsFile f(out + "/model.safetensors");
  for (const TensorInfo& t : f.tensors()) EXPECT_EQ(t.dtype_name, "F32") << t.name;
  EXPECT_EQ(f.find("lm_head.weight") != nullptr, !config_.tie_word_embeddings);
}

}  // namespace
}  // namespace plexus

// `mpirun -np 2 plexus generate|perplexity MODEL --tp 2`: one tensor-parallel rank per process
// gives what one device gives (NLL within 1e-4 on f32 weights, the same greedy ids), the same
// bits from run to run, output from rank 0 only; a world of the wrong size and a failing rank
// end every rank with the exit status and a message that name them. `--ep 2` on a mixture: one
// process per rank, each holding half the experts, gives one device's NLL and the in-process
// group's bits; gpt-oss under --tp 2 and --ep 2 the same.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "core/json.h"
#include "model/make_model.h"
#include "test_util.h"

namespace plexus {
namespace {

using testing::shell_quote;

bool mpirun_on_path() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// Runs `plexus ARGS` under `mpirun -np N --oversubscribe` with `env` set.
testing::ProcessResult run_mpi(int np, const std::string& args, const std::string& env = "") {
  // Under ASan, OpenMPI's own allocations that outlive MPI_Finalize are not ours to report.
  return testing::run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CUDA_VISIBLE_DEVICES= "
                              "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 " +
                              env + " timeout 300 mpirun -np " + std::to_string(np) + " --oversubscribe " +
                              shell_quote(PLEXUS_BINARY) + " " + args);
}

class MpiTensorParallel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_on_path()) GTEST_SKIP() << "mpirun is not installed";
    MakeModelOptions o;
    o.seed = 11;
    o.std = 0.08;
    o.vocab_size = 1501;  // odd: the ranks' vocabulary slices differ in size
    o.dtype = DType::kF32;
    write_random_model(dir_.path(), o);
  }
  std::string model() const { return shell_quote(dir_.path()); }
  // The one JSON line rank 0 prints (no other rank prints anything on stdout).
  static Json one_json(const testing::ProcessResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "more than one line on stdout:\n" << r.out;
    return Json::parse(r.out);
  }
  testing::TempDir dir_{"comm_mpi_tp"};
};

TEST_F(MpiTensorParallel, PerplexityMatchesOneDeviceAndRepeatsBitForBit) {
  const std::string ppl = "perplexity " + model() + " --ids 3,14,15,92,65,35,89,79,32,38,46,26,43,38,32,79,50 --batch-tokens 5 --json";
  const testing::ProcessResult one = testing::run_plexus(ppl + " --threads 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const Json ref = Json::parse(one.out);
  const Json a = one_json(run_mpi(2, ppl + " --tp 2 --threads 1"));
  const Json b = one_json(run_mpi(2, ppl + " --tp 2 --threads 1"));
  ASSERT_EQ(a["nll"].size(), ref["nll"].size());
  for (std::size_t i = 0; i < ref["nll"].size(); ++i) {
    EXPECT_NEAR(a["nll"][i].get<double>(), ref["nll"][i].get<double>(), 1e-4) << "token " << i + 1;
  }
  EXPECT_EQ(a["nll"], b["nll"]);  // bit for bit (printed to the last digit)
  // The MPI all-reduce adds in the in-process group's order: the bits of --tp 2 in one process.
  const testing::ProcessResult in_process = testing::run_plexus(ppl + " --tp 2 --threads 2");
  ASSERT_EQ(in_process.exit_code, 0) << in_process.err;
  EXPECT_EQ(a["nll"], Json::parse(in_process.out)["nll"]);
  // Rank 0's collectives: a partial sum of every attention and MLP block, the logits gathered.
  const Json& comm = a["execution"]["communication"]["collectives"];
  EXPECT_GT(comm["all_reduce"]["calls"].get<int>(), 0);
  EXPECT_GT(comm["all_gather"]["calls"].get<int>(), 0);
}

TEST_F(MpiTensorParallel, GreedyIdsEqualOneDeviceAndSamplingRepeats) {
  const std::string gen = "generate " + model() + " --ids 3,14,15,92,65 --max-tokens 10 --threads 1 --json";
  const testing::ProcessResult one = testing::run_plexus(gen);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const Json a = one_json(run_mpi(2, gen + " --tp 2"));
  EXPECT_EQ(a["ids"], Json::parse(one.out)["ids"]);
  EXPECT_EQ(a["completion_tokens"], Json(10));
  // Sampling: every rank holds the same logits and seed, so they draw the same tokens, and
  // two runs draw the same tokens.
  const std::string sample = gen + " --tp 2 --temperature 0.9 --top-k 50 --seed 7";
  EXPECT_EQ(one_json(run_mpi(2, sample))["ids"], one_json(run_mpi(2, sample))["ids"]);
  // Without --json the text (here ids) goes to stdout once, from rank 0.
  const testing::ProcessResult plain = run_mpi(2, "generate " + model() + " --ids 3,14,15,92,65 --max-tokens 4 --threads 1 --tp 2");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  std::string want;  // greedy: the first 4 of the 10 ids
  for (int i = 0; i < 4; ++i) want += std::to_string(a["ids"][i].get<int>()) + " ";
  EXPECT_EQ(plain.out, want + "\n");
  // One timing line on stderr: rank 0's.
  std::size_t lines = 0;
  for (std::size_t at = plain.err.find("prompt tokens"); at != std::string::npos; at = plain.err.find("prompt tokens", at + 1)) ++lines;
  EXPECT_EQ(lines, 1u) << plain.err;
}

TEST_F(MpiTensorParallel, RankZeroReadsTheTextAndEveryRankScoresIt) {
  // A model with a tokenizer: --file and --prompt are read and tokenized by rank 0 only.
  testing::TempDir with_tok{"comm_mpi_tp_tok"};
  const testing::ProcessResult made = testing::run_plexus("make-model " + shell_quote(with_tok.path()) + " --dtype f32 --seed 3 --tokenizer " +
                                                          shell_quote(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/mistral"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string text = with_tok / "text.txt";
  std::ofstream(text) << "The quick brown fox jumps over the lazy dog. Tensor parallel ranks.";
  const std::string ppl = "perplexity " + shell_quote(with_tok.path()) + " --file " + shell_quote(text) + " --threads 1 --json";
  const testing::ProcessResult one = testing::run_plexus(ppl);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const Json ref = Json::parse(one.out), mpi = one_json(run_mpi(2, ppl + " --tp 2"));
  EXPECT_EQ(mpi["n_tokens"], ref["n_tokens"]);
  ASSERT_EQ(mpi["nll"].size(), ref["nll"].size());
  for (std::size_t i = 0; i < ref["nll"].size(); ++i) EXPECT_NEAR(mpi["nll"][i].get<double>(), ref["nll"][i].get<double>(), 1e-4);
  // Text in, text out (the prompt tokenized on rank 0, the ids decoded there).
  const std::string gen = "generate " + shell_quote(with_tok.path()) + " --prompt 'Hello there' --max-tokens 6 --threads 1 --json";
  const testing::ProcessResult g1 = testing::run_plexus(gen);
  ASSERT_EQ(g1.exit_code, 0) << g1.err;
  const Json g2 = one_json(run_mpi(2, gen + " --tp 2"));
  EXPECT_EQ(g2["ids"], Json::parse(g1.out)["ids"]);
  EXPECT_EQ(g2["text"], Json::parse(g1.out)["text"]);
  // A file only rank 0 would read, missing: exit 2 naming it, before any weight is read.
  const testing::ProcessResult missing = run_mpi(2, "perplexity " + shell_quote(with_tok.path()) + " --file /nonexistent/x.txt --tp 2");
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent/x.txt"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("(rank 0 of 2)"), std::string::npos) << missing.err;
}

TEST_F(MpiTensorParallel, AWorldOfTheWrongSizeExitsTwoNamingTheNumbers) {
  const testing::ProcessResult r = run_mpi(3, "generate " + model() + " --ids 3,14 --tp 2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("mpirun started 3 ranks but tp 2 × pp 1 × 1 replica = 2 ranks needs 2"), std::string::npos) << r.err;
  const testing::ProcessResult pp = run_mpi(2, "perplexity " + model() + " --ids 3,14 --tp 1 --pp 2");
  EXPECT_EQ(pp.exit_code, 2) << pp.err;
  EXPECT_NE(pp.err.find("--pp 2 under mpirun is not supported"), std::string::npos) << pp.err;
  // --tp 1 under mpirun -np 2 would run the whole model twice: refused too.
  const testing::ProcessResult tp1 = run_mpi(2, "perplexity " + model() + " --ids 3,14");
  EXPECT_EQ(tp1.exit_code, 2) << tp1.err;
  EXPECT_NE(tp1.err.find("mpirun started 2 ranks but tp 1"), std::string::npos) << tp1.err;
}

TEST_F(MpiTensorParallel, ExpertParallelMatchesOneDeviceAndTheInProcessGroup) {
  testing::TempDir moe{"comm_mpi_ep"};
  MakeModelOptions o;  // Qwen3-MoE tiny: 8 experts top-2, layer 1 dense
  o.arch = Arch::kQwen3Moe;
  o.seed = 4;
  o.dtype = DType::kF32;
  o.vocab_size = 1501;
  write_random_model(moe.path(), o);
  const std::string ppl = "perplexity " + shell_quote(moe.path()) + " --ids 3,14,15,92,65,35,89,79,32,38,46,26 --batch-tokens 5 --json";
  const testing::ProcessResult one = testing::run_plexus(ppl + " --threads 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const Json ref = Json::parse(one.out);
  const Json a = one_json(run_mpi(2, ppl + " --ep 2 --threads 1"));
  ASSERT_EQ(a["nll"].size(), ref["nll"].size());
  for (std::size_t i = 0; i < ref["nll"].size(); ++i) {
    EXPECT_NEAR(a["nll"][i].get<double>(), ref["nll"][i].get<double>(), 1e-4) << "token " << i + 1;
  }
  const testing::ProcessResult in_process = testing::run_plexus(ppl + " --ep 2 --threads 2");
  ASSERT_EQ(in_process.exit_code, 0) << in_process.err;
  EXPECT_EQ(a["nll"], Json::parse(in_process.out)["nll"]);
  // Four ranks asked of a world of two: exit 2 naming both.
  const testing::ProcessResult r = run_mpi(2, ppl + " --ep 4");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("mpirun started 2 ranks but ep 4 × pp 1 × 1 replica = 4 ranks needs 4"), std::string::npos) << r.err;
}

// gpt-oss (sinks, q/k/v/o biases, expert biases, sliding and full layers) with one rank per
// process: --tp 2 (every expert's width split, the down bias added by rank 0 only) and --ep 2
// (two whole experts per process) give one device's NLL and the in-process group's bits.
TEST_F(MpiTensorParallel, GptOssTensorAndExpertParallelMatchOneDeviceAndTheInProcessGroup) {
  testing::TempDir oss{"comm_mpi_gpt_oss"};
  MakeModelOptions o;  // gpt-oss tiny: 4 heads, 2 kv heads, 4 experts of width 64, top-2, window 8
  o.arch = Arch::kGptOss;
  o.seed = 6;
  o.std = 0.08;
  o.dtype = DType::kF32;
  o.vocab_size = 1501;
  write_random_model(oss.path(), o);
  const std::string ppl = "perplexity " + shell_quote(oss.path()) + " --ids 3,14,15,92,65,35,89,79,32,38,46,26,43,38 --batch-tokens 5 --json";
  const testing::ProcessResult one = testing::run_plexus(ppl + " --threads 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const Json ref = Json::parse(one.out);
  for (const std::string flag : {"--tp 2", "--ep 2"}) {
    const Json a = one_json(run_mpi(2, ppl + " " + flag + " --threads 1"));
    ASSERT_EQ(a["nll"].size(), ref["nll"].size()) << flag;
    for (std::size_t i = 0; i < ref["nll"].size(); ++i) {
      EXPECT_NEAR(a["nll"][i].get<double>(), ref["nll"][i].get<double>(), 1e-4) << flag << " token " << i + 1;
    }
    const testing::ProcessResult in_process = testing::run_plexus(ppl + " " + flag + " --threads 2");
    ASSERT_EQ(in_process.exit_code, 0) << in_process.err;
    EXPECT_EQ(a["nll"], Json::parse(in_process.out)["nll"]) << flag;
  }
}

// GPT-2 over two processes: --tp 2 (each rank's heads of c_attn, c_fc's columns, the Conv1D
// weights read in place) gives one device's NLL and the in-process group's bits.
TEST_F(MpiTensorParallel, Gpt2TensorParallelMatchesOneDeviceAndTheInProcessGroup) {
  testing::TempDir gpt2{"comm_mpi_gpt2"};
  MakeModelOptions o;  // GPT-2 tiny: hidden 64, 4 heads, 4 layers
  o.arch = Arch::kGpt2;
  o.seed = 8;
  o.std = 0.08;
  o.dtype = DType::kF32;
  o.vocab_size = 1501;
  write_random_model(gpt2.path(), o);
  const std::string ppl = "perplexity " + shell_quote(gpt2.path()) + " --ids 3,14,15,92,65,35,89,79,32,38,46,26,43,38 --batch-tokens 5 --json";
  const testing::ProcessResult one = testing::run_plexus(ppl + " --threads 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const Json ref = Json::parse(one.out);
  const Json a = one_json(run_mpi(2, ppl + " --tp 2 --threads 1"));
  ASSERT_EQ(a["nll"].size(), ref["nll"].size());
  for (std::size_t i = 0; i < ref["nll"].size(); ++i) {
    EXPECT_NEAR(a["nll"][i].get<double>(), ref["nll"][i].get<double>(), 1e-4) << "token " << i + 1;
  }
  const testing::ProcessResult in_process = testing::run_plexus(ppl + " --tp 2 --threads 2");
  ASSERT_EQ(in_process.exit_code, 0) << in_process.err;
  EXPECT_EQ(a["nll"], Json::parse(in_process.out)["nll"]);
}

TEST_F(MpiTensorParallel, AFailingRankEndsEveryRankWithExitOneNamingIt) {
  for (int rank : {1, 0}) {
    const testing::ProcessResult r =
        run_mpi(2, "generate " + model() + " --ids 3,14,15 --max-tokens 4 --threads 1 --tp 2", "PLEXUS_TP_FAIL_RANK=" + std::to_string(rank));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("plexus: tensor-parallel rank " + std::to_string(rank) + " of 2 failed: injected failure"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");  // nothing generated
  }
}

}  // namespace
}  // namespace plexus

// `plexus deploy --api-type vllm|tgi|tei` for architectures plexus does not load (OPT, GPT-2, T5,
// BERT), through the real binary: checkpoints written by foreign_models.py (real safetensors files
// with each family's names and shapes), sized from config.json and the headers alone, with the keys
// said; a config that cannot give a number exits 2 naming the keys, and nothing is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/json.h"
#include "core/units.h"
#include "test_util.h"

namespace plexus::deploy {
namespace {

namespace fs = std::filesystem;
using plexus::testing::ProcessResult;
using plexus::testing::run_command;
using plexus::testing::run_plexus;
using plexus::testing::shell_quote;
using plexus::testing::TempDir;

const std::string kEnginesData = std::string(PLEXUS_SOURCE_DIR) + "/tests/deploy/data";

class DeployEngines : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("deploy_engines");
    const ProcessResult r =
        run_command("python3 " + shell_quote(std::string(PLEXUS_SOURCE_DIR) + "/tests/deploy/foreign_models.py") + " " + shell_quote(dir_->path()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expected_ = new Json(parse_json(r.out, "foreign_models.py"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete expected_;
    dir_ = nullptr;
    expected_ = nullptr;
  }
  static ProcessResult deploy(const std::string& model, const std::string& args) {
    return run_plexus("deploy " + shell_quote(*dir_ / model) + " --inventory " + shell_quote(kEnginesData + "/h100x2.json") + " " + args);
  }
  static std::string bytes(const std::string& model, const char* field) {
    return format_bytes((*expected_)[model][field].get<std::uint64_t>());
  }
  // A copy of `model` whose config.json lacks `key` (or, with key "", is as it was).
  static std::string copy_without(const std::string& model, const std::string& key, const std::string& name) {
    const std::string to = *dir_ / name;
    fs::copy(*dir_ / model, to, fs::copy_options::recursive);
    Json config = read_json_file(to + "/config.json");
    if (!key.empty()) config.erase(key);
    std::ofstream(to + "/config.json") << config.dump(2);
    return name;
  }
  static TempDir* dir_;
  static Json* expected_;
};

TempDir* DeployEngines::dir_ = nullptr;
Json* DeployEngines::expected_ = nullptr;

TEST_F(DeployEngines, VllmAndTgiSizeArchitecturesPlexusDoesNotLoad) {
  struct Case {
    std::string model, context;
    std::vector<std::string> keys;  // the config keys the sizing line names
  };
  const std::vector<Case> cases = {
      {"opt", "2048", {"num_hidden_layers 2", "KV heads 4 (num_attention_heads, no KV-head key)", "hidden_size 64 / num_attention_heads 4",
                       "max_position_embeddings 2048", "the 2 shards that model.safetensors.index.json names"}},
      {"gpt2", "1024", {"n_layer 2", "KV heads 4 (n_head, no KV-head key)", "head_dim 16 (n_embd 64 / n_head 4)", "n_positions 1024",
                        "the headers of model.safetensors"}},
      // The decoder's 3 blocks, not the encoder's 2 (num_layers).
      {"t5", "512", {"num_decoder_layers 3", "KV heads 4 (num_heads, no KV-head key)", "d_kv 16", "n_positions 512"}},
  };
  for (const Case& c : cases) {
    for (const std::string api : {"vllm", "tgi"}) {
      SCOPED_TRACE(c.model + " " + api);
      const ProcessResult r = deploy(c.model, "--target docker --api-type " + api + " --dry-run");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.err.find("sizing: "), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(bytes(c.model, "parameter_bytes") + " of weights"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("KV cache " + bytes(c.model, "kv_bytes_per_token") + " per token"), std::string::npos) << r.err;
      for (const std::string& k : c.keys) EXPECT_NE(r.err.find(k), std::string::npos) << k << "\n" << r.err;
      // The context is the model's positions (below the default --context 4096).
      const std::string flags = api == "vllm" ? "--tensor-parallel-size 2 --pipeline-parallel-size 1 --max-model-len " + c.context
                                              : "--num-shard 2 --max-total-tokens " + c.context;
      EXPECT_NE(r.out.find(flags), std::string::npos) << r.out;
    }
  }
}

// A multi-query model (one KV head: StarCoder, SantaCoder) shards over 2 GPUs in TGI, which keeps
// the single KV head whole on each shard, as in vLLM, which replicates it (it was refused for TGI
// because 1 KV head does not divide by 2). Its KV cache is one head's on each GPU.
TEST_F(DeployEngines, AMultiQueryModelShardsOverSeveralGpus) {
  const std::string mqa = copy_without("gpt2", "", "gpt2-multi-query");
  Json config = read_json_file(*dir_ / (mqa + "/config.json"));
  config["multi_query"] = true;
  std::ofstream(*dir_ / (mqa + "/config.json")) << config.dump(2);
  const ProcessResult tgi = deploy(mqa, "--target docker --api-type tgi --dry-run");
  ASSERT_EQ(tgi.exit_code, 0) << tgi.err;
  EXPECT_NE(tgi.out.find("--num-shard 2"), std::string::npos) << tgi.out;
  EXPECT_NE(tgi.err.find("KV heads 1 (multi_query true: one KV head)"), std::string::npos) << tgi.err;
  const ProcessResult vllm = deploy(mqa, "--target docker --api-type vllm --dry-run");
  ASSERT_EQ(vllm.exit_code, 0) << vllm.err;
  EXPECT_NE(vllm.out.find("--tensor-parallel-size 2"), std::string::npos) << vllm.out;
  // Several KV heads that do not divide by the GPUs are still refused for TGI (gpt2: 4 heads, 3 GPUs).
  const ProcessResult three = run_plexus("deploy " + shell_quote(*dir_ / "gpt2") + " --inventory " + shell_quote(kEnginesData + "/l4x4.json") +
                                         " --devices 0,1,2 --target docker --api-type tgi --dry-run");
  EXPECT_EQ(three.exit_code, 2) << three.err;
  EXPECT_NE(three.err.find("4 attention heads / 4 KV heads do not divide by 3"), std::string::npos) << three.err;
}

// Every target writes its files for such a model (the validators check them: check_cli_outputs.sh).
TEST_F(DeployEngines, EveryTargetWritesTheFiles) {
  for (const std::string target : {"docker", "compose", "kubernetes", "slurm"}) {
    const std::string out = *dir_ / ("out-" + target);
    const ProcessResult r = deploy("gpt2", "--target " + target + " --api-type vllm --out " + shell_quote(out));
    ASSERT_EQ(r.exit_code, 0) << target << "\n" << r.err;
    EXPECT_FALSE(fs::is_empty(out)) << target;
  }
}

TEST_F(DeployEngines, TeiSizesAnEmbeddingModelFromItsHeaders) {
  const ProcessResult r = deploy("bert", "--target kubernetes --api-type tei --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("sizing: BertModel from config.json and the safetensors headers: " + bytes("bert", "parameter_bytes") + " of weights"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("max_position_embeddings 512"), std::string::npos) << r.err;
  // GPT-2's architecture, GPT2LMHeadModel, ends in "Model" but generates: a causal LM, not TEI's.
  const ProcessResult gpt2 = deploy("gpt2", "--target docker --api-type tei --dry-run");
  EXPECT_EQ(gpt2.exit_code, 2);
  EXPECT_NE(gpt2.err.find("GPT2LMHeadModel (a causal LM)"), std::string::npos) << gpt2.err;
}

TEST_F(DeployEngines, ConfigWithoutANumberIsRefusedNamingTheKeys) {
  struct Case {
    std::string model, key, expect;
  };
  const std::vector<Case> cases = {
      {"gpt2", "n_layer", "gives no number of layers: none of num_hidden_layers, n_layer, num_layers, n_layers"},
      {"gpt2", "n_head", "gives no number of attention heads: none of num_attention_heads, n_head, num_heads, n_heads"},
      {"gpt2", "n_embd", "gives no head dimension: none of head_dim, d_kv, kv_channels, nor a hidden size (hidden_size, n_embd, d_model)"},
      {"opt", "vocab_size", "gives no vocabulary size: none of vocab_size, n_vocab, padded_vocab_size"},
      {"t5", "num_heads", "gives no number of decoder attention heads: none of decoder_attention_heads"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model + " without " + c.key);
    const std::string model = copy_without(c.model, c.key, c.model + "-no-" + c.key);
    const std::string out = *dir_ / ("never-" + model);
    const ProcessResult r = deploy(model, "--target docker --api-type vllm --out " + shell_quote(out));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(model + "/config.json " + c.expect), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
  // Numbers no model has: refused, not overflowed.
  const std::string huge = copy_without("gpt2", "", "gpt2-huge");
  Json config = read_json_file(*dir_ / (huge + "/config.json"));
  config["n_layer"] = 1000000000000000LL;
  std::ofstream(*dir_ / (huge + "/config.json")) << config.dump(2);
  const ProcessResult big = deploy(huge, "--target docker --api-type vllm --dry-run");
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find("give more than 1 EiB of memory: check them"), std::string::npos) << big.err;
  // Heads × head_dim beyond 64 bits where config.json gives no hidden size: refused naming the
  // keys (it was multiplied unchecked: undefined behaviour).
  const std::string wide = copy_without("gpt2", "n_embd", "gpt2-wide-heads");
  config = read_json_file(*dir_ / (wide + "/config.json"));
  config["n_head"] = 1LL << 62;
  config["head_dim"] = 4;
  std::ofstream(*dir_ / (wide + "/config.json")) << config.dump(2);
  const ProcessResult overflow = deploy(wide, "--target docker --api-type vllm --dry-run");
  EXPECT_EQ(overflow.exit_code, 2) << overflow.err;
  EXPECT_NE(overflow.err.find(wide + "/config.json: the hidden size n_head 4611686018427387904 × head_dim 4 overflows a 64-bit integer"),
            std::string::npos)
      << overflow.err;
  // No weights to read: a config alone, a GGUF file.
  const std::string bare = copy_without("gpt2", "", "gpt2-no-weights");
  fs::remove(*dir_ / (bare + "/model.safetensors"));
  const ProcessResult none = deploy(bare, "--target docker --api-type tgi --dry-run");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("holds no safetensors weights"), std::string::npos) << none.err;
  std::ofstream(*dir_ / "model.gguf") << "GGUF";
  const ProcessResult gguf = deploy("model.gguf", "--target docker --api-type vllm --dry-run");
  EXPECT_EQ(gguf.exit_code, 2);
  EXPECT_NE(gguf.err.find("a GGUF file deploys with --api-type plexus"), std::string::npos) << gguf.err;
}

// An index whose shards are not here (a repository's index downloaded first): its metadata.total_size.
TEST_F(DeployEngines, IndexTotalSizeWhereTheShardsAreNotHere) {
  const std::string model = copy_without("opt", "", "opt-index-only");
  fs::remove(*dir_ / (model + "/model-00002-of-00002.safetensors"));
  const ProcessResult r = deploy(model, "--target docker --api-type vllm --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(bytes("opt", "parameter_bytes") + " of weights (metadata.total_size of model.safetensors.index.json "
                                                         "(shard model-00002-of-00002.safetensors is not here))"),
            std::string::npos)
      << r.err;
}

// plexus serve runs what plexus loads: --api-type plexus keeps the loader, and its refusal says
// which engines deploy the model instead. Flags of plexus's own plan are refused for the others.
TEST_F(DeployEngines, PlexusKeepsItsLoaderAndTheOthersRefuseItsPlanFlags) {
  const ProcessResult r = deploy("opt", "--target docker --dry-run");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown architecture 'OPTForCausalLM'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--api-type vllm or tgi"), std::string::npos) << r.err;
  for (const std::string flag : {"--dtype float16", "--quantize q8_0", "--strategy balanced", "--tp 2"}) {
    const ProcessResult f = deploy("gpt2", "--target docker --api-type vllm --dry-run " + flag);
    EXPECT_EQ(f.exit_code, 2) << flag;
    EXPECT_NE(f.err.find(flag.substr(0, flag.find(' '))), std::string::npos) << flag << "\n" << f.err;
  }
}

}  // namespace
}  // namespace plexus::deploy

// What a MODEL argument means, through the real binary: a missing or incomplete directory is
// named as such (never as a missing tokenizer), a path is never taken for a Hugging Face id, and
// an id resolves to the local Hugging Face cache (a fake one here, laid out as huggingface_hub
// lays it out, with real symlinks into blobs/), offline, in every command that takes a model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_run.h"

namespace plexus::testing {
namespace {

namespace fs = std::filesystem;

const char* const kCommit = "0123456789abcdef0123456789abcdef01234567";
const char* const kOlder = "89abcdef0123456789abcdef0123456789abcdef";

class ModelLocation : public ::testing::Test {
 protected:
  void SetUp() override {
    tiny_model(model_dir_);
    fs::create_directories(home_);
    fs::create_directories(fs::path(work_) / "models");
    fs::copy(model_dir_.path(), fs::path(work_) / "models" / "small", fs::copy_options::recursive);
    // The cache: acme/tiny at main (complete) and at tag v1 (an older commit, config.json only).
    const fs::path repo = fs::path(hub_) / "models--acme--tiny";
    fs::create_directories(repo / "blobs");
    for (const char* commit : {kCommit, kOlder}) fs::create_directories(repo / "snapshots" / commit);
    int blob = 0;
    auto link = [&](const fs::path& from, const char* commit) {
      const std::string name = "blob" + std::to_string(blob++);
      fs::copy_file(from, repo / "blobs" / name);
      fs::create_symlink("../../blobs/" + name, repo / "snapshots" / commit / from.filename());
    };
    const fs::path tokenizer = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3";
    for (const char* file : {"config.json", "model.safetensors"}) link(fs::path(model_dir_.path()) / file, kCommit);
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"}) link(tokenizer / file, kCommit);
    link(fs::path(model_dir_.path()) / "config.json", kOlder);
    fs::create_directories(repo / "refs");
    // (The Llama 3 tokenizer's end-of-sequence id is beyond the tiny vocabulary: runs pass --ignore-eos.)
    write_file(repo / "refs" / "main", kCommit);
    write_file(repo / "refs" / "v1", kOlder);
  }

  // plexus ARGS run in work_, with HOME an empty directory and no Hugging Face variable unless
  // `env` sets it (e.g. "HF_HUB_CACHE=/x").
  ProcessResult run(const std::string& args, const std::string& env = "") const {
    return run_command("cd " + shell_quote(work_) +
                       " && timeout -k 5 120 env -u HF_HUB_CACHE -u HUGGINGFACE_HUB_CACHE -u HF_HOME -u XDG_CACHE_HOME "
                       "-u PLEXUS_VIRTUAL_DEVICES -u PLEXUS_VIRTUAL_GPUS CUDA_VISIBLE_DEVICES= "
                       "PLEXUS_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 PLEXUS_ROCM_SMI_LIBRARY=/nonexistent/librocm_smi64.so "
                       "HOME=" + shell_quote(home_) + " " + env + " " + shell_quote(PLEXUS_BINARY) + " " + args);
  }
  std::string cache_env() const { return "HF_HUB_CACHE=" + shell_quote(hub_); }

  TempDir model_dir_{"model-location-model"};
  TempDir root_{"model-location"};
  std::string work_ = root_ / "work";
  std::string home_ = root_ / "home";
  std::string hub_ = root_ / "cache/hub";
};

TEST_F(ModelLocation, AMissingDirectoryIsNamedAsSuchNeverAsAMissingTokenizer) {
  for (const char* input : {"--prompt hello", "--ids 1,2"}) {
    const ProcessResult r = run(std::string("generate models/smal ") + input);
    expect_usage_error(r, input, {"model 'models/smal' not found: no such directory", "did you mean 'models/small'?"});
    EXPECT_EQ(r.err.find("tokenizer"), std::string::npos) << r.err;
    // models/ is a local directory: models/smal is a path, not a Hugging Face id.
    EXPECT_EQ(r.err.find("huggingface-cli"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("hf download"), std::string::npos) << r.err;
  }
  expect_usage_error(run("perplexity nowhere/at/all --text hi"), "deep", {"model 'nowhere/at/all' not found", "'nowhere/at' does not exist"});
  expect_usage_error(run("plan ./models/smal"), "plan", {"no such directory", "did you mean './models/small'?"});
  // A file's name is a path too, wherever its folder is.
  const ProcessResult gguf = run("generate elsewhere/model.gguf --ids 1");
  expect_usage_error(gguf, "gguf", {"model 'elsewhere/model.gguf' not found: no such GGUF file"});
  EXPECT_EQ(gguf.err.find("hf download"), std::string::npos) << gguf.err;
}

TEST_F(ModelLocation, AConfigWithoutWeightsIsNamed) {
  fs::create_directories(fs::path(work_) / "onlycfg");
  fs::copy_file(fs::path(model_dir_.path()) / "config.json", fs::path(work_) / "onlycfg" / "config.json");
  const std::string expected = "'onlycfg' has config.json but no weights (model.safetensors or model.safetensors.index.json)";
  for (const std::string c : {"generate onlycfg --prompt hello", "generate onlycfg --ids 1", "perplexity onlycfg --text hi",
                              "serve onlycfg --port 0", "quantize onlycfg out.gguf"}) {
    const ProcessResult r = run(c);
    expect_usage_error(r, c, {expected});
    EXPECT_EQ(r.err.find("tokenizer"), std::string::npos) << c << ": " << r.err;
  }
  // plan and estimate need no weights.
  EXPECT_EQ(run("plan onlycfg").exit_code, 0);
  fs::create_directories(fs::path(work_) / "empty");
  expect_usage_error(run("generate empty --prompt hello"), "empty", {"'empty' is not a model directory: it has no config.json"});
}

TEST_F(ModelLocation, AHubIdResolvesToTheCacheInEveryModelCommand) {
  const std::vector<std::string> commands{"generate acme/tiny --ids 1,2 --max-tokens 2 --ignore-eos", "perplexity acme/tiny --ids 1,2,3",
                                          "plan acme/tiny", "estimate acme/tiny",
                                          "generate acme/tiny --ids 1 --max-tokens 1 --ignore-eos --revision main",
                                          "generate acme/tiny --ids 1 --max-tokens 1 --ignore-eos --revision " + std::string(kCommit)};
  for (const std::string& c : commands) {
    const ProcessResult r = run(c, cache_env());
    EXPECT_EQ(r.exit_code, 0) << c << ": " << r.err;
  }
  const ProcessResult tok = run("tokenize acme/tiny --text hello", cache_env());
  EXPECT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_NE(tok.out.find("\"ids\""), std::string::npos) << tok.out;
  write_file(fs::path(work_) / "chat.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n");
  const ProcessResult chat = run("chat-template acme/tiny --jsonl chat.jsonl", cache_env());
  EXPECT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_NE(chat.out.find("\"rendered\""), std::string::npos) << chat.out;
  // deploy writes files that name a local path: it says where the id's snapshot is.
  expect_usage_error(run("deploy acme/tiny --target docker --dry-run", cache_env()), "deploy",
                     {"model 'acme/tiny' is in the Hugging Face cache, but this command reads a local path only: pass " + hub_ +
                      "/models--acme--tiny/snapshots/" + kCommit});
  // quantize reads the cached weights (and writes them, rows no block divides as F16).
  const ProcessResult q = run("quantize acme/tiny tiny.gguf", cache_env());
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("wrote tiny.gguf"), std::string::npos) << q.out;
}

TEST_F(ModelLocation, TheCacheIsFoundAsHuggingfaceHubFindsIt) {
  // HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub, each with the rest unset.
  const fs::path cache = fs::path(hub_).parent_path();  // root/cache, holding hub/
  const fs::path xdg = root_ / "xdg";
  fs::create_directories(xdg / "huggingface");
  fs::create_symlink(hub_, xdg / "huggingface" / "hub");
  fs::create_directories(fs::path(home_) / ".cache" / "huggingface");
  fs::create_symlink(hub_, fs::path(home_) / ".cache" / "huggingface" / "hub");
  for (const std::string& env : {"HF_HOME=" + shell_quote(cache.string()), "XDG_CACHE_HOME=" + shell_quote(xdg.string()), std::string(),
                                "HUGGINGFACE_HUB_CACHE=" + shell_quote(hub_)}) {
    const ProcessResult r = run("generate acme/tiny --ids 1 --max-tokens 1 --ignore-eos", env);
    EXPECT_EQ(r.exit_code, 0) << env << ": " << r.err;
  }
  // HF_HUB_CACHE wins over HF_HOME.
  const ProcessResult r = run("generate acme/tiny --ids 1 --max-tokens 1 --ignore-eos", "HF_HOME=/nonexistent " + cache_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(ModelLocation, RevisionsAreBranchesTagsOrCommits) {
  // v1 (a tag in refs/) and its commit hold config.json only: enough to plan, not to run.
  EXPECT_EQ(run("plan acme/tiny --revision v1", cache_env()).exit_code, 0);
  EXPECT_EQ(run("plan acme/tiny --revision " + std::string(kOlder), cache_env()).exit_code, 0);
  expect_usage_error(run("generate acme/tiny --ids 1 --revision v1", cache_env()), "v1",
                     {"snapshots/" + std::string(kOlder) + "' has config.json but no weights", "holds only part of acme/tiny",
                      "hf download acme/tiny --revision v1"});
  const ProcessResult missing = run("generate acme/tiny --ids 1 --revision v2", cache_env());
  expect_usage_error(missing, "v2", {"model 'acme/tiny' has no revision 'v2'", "refs holds main, v1",
                                     "hf download acme/tiny --revision v2"});
  // --revision names a revision of an id, not of a local directory.
  expect_usage_error(run("generate models/small --ids 1 --revision v1", cache_env()), "local", {"--revision v1", "local directory"});
}

// "." named snapshots/ itself (and "refs/." refs/): a revision is refused unless each of its
// parts is a name, and a refs file must name one snapshot folder.
TEST_F(ModelLocation, DotRevisionsAreRefused) {
  for (const std::string rev : {".", "..", "./main", "v1/..", "v1//x"}) {
    expect_usage_error(run("plan acme/tiny --revision " + rev, cache_env()), rev, {"--revision '" + rev + "': a branch, tag or commit"});
  }
  write_file(fs::path(hub_) / "models--acme--tiny" / "refs" / "dot", ".");
  expect_usage_error(run("plan acme/tiny --revision dot", cache_env()), "dot", {"refs/dot names commit '.', which is not a commit"});
}

TEST_F(ModelLocation, AnIdNotInTheCacheNamesWhereAndHowToDownload) {
  const ProcessResult r = run("generate acme/other --ids 1", cache_env());
  expect_usage_error(r, "acme/other", {"neither a local directory nor in the Hugging Face cache " + hub_,
                                       "from HF_HUB_CACHE", hub_ + "/models--acme--other", "hf download acme/other"});
  const ProcessResult home = run("plan acme/other");
  expect_usage_error(home, "default", {home_ + "/.cache/huggingface/hub/models--acme--other", "hf download acme/other"});
  // A ref whose snapshot is gone.
  write_file(fs::path(hub_) / "models--acme--tiny" / "refs" / "broken", "fedcba9876543210fedcba9876543210fedcba98");
  expect_usage_error(run("plan acme/tiny --revision broken", cache_env()), "broken",
                     {"refs/broken names commit 'fedcba9876543210fedcba9876543210fedcba98'", "is missing"});
}

TEST_F(ModelLocation, ALocalDirectoryOfTheSameNameComesFirst) {
  // The cache's main is broken; a local acme/tiny is complete and is the one used.
  write_file(fs::path(hub_) / "models--acme--tiny" / "refs" / "main", "fedcba9876543210fedcba9876543210fedcba98");
  EXPECT_EQ(run("plan acme/tiny", cache_env()).exit_code, 2);
  fs::create_directories(fs::path(work_) / "acme");
  fs::copy(model_dir_.path(), fs::path(work_) / "acme" / "tiny", fs::copy_options::recursive);
  const ProcessResult r = run("generate acme/tiny --ids 1 --max-tokens 1", cache_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace plexus::testing

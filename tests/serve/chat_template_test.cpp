// ChatTemplate: every golden render of the Llama 3 and Qwen3 templates (made with transformers'
// jinja2 setup) byte for byte, the templates found in model directories and GGUF files, and
// transformers' globals (raise_exception, strftime_now, special tokens, kwargs).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "core/gguf_writer.h"
#include "jinja_util.h"
#include "test_util.h"

namespace plexus::testing {
namespace {

using OJson = nlohmann::ordered_json;

// 2026-11-26 04:30:00 UTC, when the goldens' strftime_now was fixed.
constexpr double kGoldenNow = 1795667400.0;

std::vector<OJson> golden_cases(const std::string& model) {
  const std::string path = std::string(PLEXUS_GOLDEN_DIR) + "/chat_templates/" + model + "/cases.jsonl";
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<OJson> cases;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) cases.push_back(OJson::parse(line));
  return cases;
}

ChatInput input_of(const OJson& c) {
  ChatInput in;
  in.messages = c["messages"];
  if (c.contains("tools")) in.tools = c["tools"];
  in.add_generation_prompt = c.value("add_generation_prompt", false);
  if (c.contains("kwargs")) in.kwargs = c["kwargs"];
  return in;
}

void check_golden(const std::string& model, std::size_t expected_cases) {
  std::optional<ChatTemplate> found = ChatTemplate::from_model(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/" + model);
  ASSERT_TRUE(found);
  // The same template with the goldens' clock.
  const Json config = read_json_file(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/" + model + "/tokenizer_config.json");
  ChatTemplateTokens tokens;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    if (!config.contains(key) || !config[key].is_string()) continue;
    const std::string v = config[key].get<std::string>();
    if (std::string(key) == "bos_token") tokens.bos_token = v;
    if (std::string(key) == "eos_token") tokens.eos_token = v;
    if (std::string(key) == "unk_token") tokens.unk_token = v;
    if (std::string(key) == "pad_token") tokens.pad_token = v;
  }
  const ChatTemplate tmpl(config["chat_template"].get<std::string>(), tokens, [] { return kGoldenNow; });
  const std::vector<OJson> cases = golden_cases(model);
  ASSERT_EQ(cases.size(), expected_cases);
  int rendered = 0, raised = 0, failed = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const OJson& c = cases[i];
    SCOPED_TRACE(model + " case " + std::to_string(i));
    if (c.contains("rendered")) {
      EXPECT_EQ(tmpl.render(input_of(c)), c["rendered"].get<std::string>());
      EXPECT_EQ(found->render(input_of(c)), c["rendered"].get<std::string>());
      ++rendered;
    } else if (c["error_kind"] == "raise_exception") {
      try {
        tmpl.render(input_of(c));
        ADD_FAILURE() << "rendered; expected raise_exception(" << c["error"] << ")";
      } catch (const TemplateRaised& e) {
        EXPECT_EQ(std::string(e.what()), c["error"].get<std::string>());
      }
      ++raised;
    } else {
      EXPECT_THROW(tmpl.render(input_of(c)), TemplateError);
      ++failed;
    }
  }
  EXPECT_GT(rendered, 0);
  std::printf("%s: %d rendered, %d raised, %d failed as expected\n", model.c_str(), rendered, raised, failed);
}

TEST(ChatTemplateGoldenTest, Llama3EveryCase) { check_golden("llama3", 40); }
TEST(ChatTemplateGoldenTest, Qwen3EveryCase) { check_golden("qwen3", 50); }
// Gemma 3's template on the llama3 and qwen3 conversations, rendered by @huggingface/jinja
// (tests/tools/chat_template_cases.js): 53 renders, 37 of its raise_exception calls.
TEST(ChatTemplateGoldenTest, Gemma3EveryCase) { check_golden("gemma3", 90); }

TEST(ChatTemplateTest, OneTemplateRendersOnManyThreads) {
  std::optional<ChatTemplate> t = ChatTemplate::from_model(std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/qwen3");
  ASSERT_TRUE(t);
  std::vector<OJson> cases;
  for (const OJson& c : golden_cases("qwen3"))
    if (c.contains("rendered")) cases.push_back(c);
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int round = 0; round < 5; ++round)
        for (const OJson& c : cases) wrong[static_cast<std::size_t>(k)] += t->render(input_of(c)) != c["rendered"].get<std::string>();
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

TEST(ChatTemplateTest, GlobalsOfTransformers) {
  ChatTemplateTokens tokens;
  tokens.bos_token = "<s>";
  tokens.eos_token = "</s>";
  const ChatTemplate t(
      "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}{{ eos_token }}{% endfor %}"
      "{% if add_generation_prompt %}>{% endif %}{{ strftime_now('%Y-%m-%d %H:%M %d %b %Y') }}|{{ tools is none }}"
      "|{{ unk_token is defined }}|{{ flag }}",
      tokens, [] { return kGoldenNow; });
  ChatInput in;
  in.messages = OJson::parse(R"([{"role": "user", "content": "hi"}])");
  in.kwargs = {{"flag", "on"}};
  EXPECT_EQ(t.render(in), "<s>user:hi</s>>2026-11-26 04:30 26 Nov 2026|True|False|on");
  in.add_generation_prompt = false;
  in.tools = OJson::parse(R"([{"type": "function"}])");
  EXPECT_EQ(t.render(in), "<s>user:hi</s>2026-11-26 04:30 26 Nov 2026|False|False|on");
}

TEST(ChatTemplateTest, StrftimeNowChargesItsBuffer) {
  // Found in review: each call made a buffer of 16 bytes per format character uncharged, so
  // 100,000 calls of a 998-character format zeroed 1.6 GB (a million, 16 GB). Now the work limit
  // stops them.
  const ChatTemplate t("{% for i in range(100000) %}{% set x = strftime_now('%c' * 499) %}{% endfor %}ok", {},
                       [] { return kGoldenNow; });
  ChatInput in;
  in.messages = OJson::array();
  try {
    t.render(in);
    FAIL() << "rendered";
  } catch (const TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("formatting the time: the template touches more than"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplateTest, RaiseExceptionMessageIsExact) {
  const ChatTemplate t("{% if messages[0].role != 'user' %}{{ raise_exception('Roles must be user first: ' ~ messages[0].role) }}{% endif %}ok",
                       {});
  ChatInput in;
  in.messages = OJson::parse(R"([{"role": "assistant", "content": "x"}])");
  try {
    t.render(in);
    FAIL() << "no exception";
  } catch (const TemplateRaised& e) {
    EXPECT_STREQ(e.what(), "Roles must be user first: assistant");
  }
  in.messages[0]["role"] = "user";
  EXPECT_EQ(t.render(in), "ok");
}

TEST(ChatTemplateTest, ToolsKeepTheirKeyOrder) {
  const ChatTemplate t("{{ tools | tojson }}", {});
  ChatInput in;
  in.tools = OJson::parse(R"([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}])");
  EXPECT_EQ(t.render(in), R"([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}])");
}

TEST(ChatTemplateTest, SyntaxErrorAtConstruction) {
  try {
    ChatTemplate t("line\n{% if %}", {});
    FAIL() << "parsed";
  } catch (const TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2, column 7"), std::string::npos) << e.what();
  }
}

void write_template_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(ChatTemplateFromModelTest, TokenizerConfigForms) {
  TempDir dir("chat_template_forms");
  // A list of named templates ("default" is the one), and AddedToken objects.
  write_template_file(dir / "tokenizer_config.json", R"({
    "chat_template": [{"name": "tool_use", "template": "TOOLS"}, {"name": "default", "template": "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}"}],
    "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null})");
  std::optional<ChatTemplate> t = ChatTemplate::from_model(dir.path());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->render(ChatInput{}), "<s>|</s>|");

  // chat_template.jinja beside the config wins over the config's field.
  write_template_file(dir / "chat_template.jinja", "from the file {{ eos_token }}\n");
  t = ChatTemplate::from_model(dir.path());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->render(ChatInput{}), "from the file </s>");
}

TEST(ChatTemplateFromModelTest, NoTemplateAndBadConfigs) {
  TempDir dir("chat_template_bad");
  write_template_file(dir / "tokenizer_config.json", R"({"eos_token": "</s>"})");
  EXPECT_FALSE(ChatTemplate::from_model(dir.path()));
  write_template_file(dir / "tokenizer_config.json", R"({"chat_template": 5})");
  EXPECT_THROW(ChatTemplate::from_model(dir.path()), InputError);
  write_template_file(dir / "tokenizer_config.json", R"({"chat_template": [{"name": "other", "template": "x"}]})");
  EXPECT_THROW(ChatTemplate::from_model(dir.path()), InputError);
  write_template_file(dir / "tokenizer_config.json", R"({"chat_template": "x", "bos_token": 3})");
  EXPECT_THROW(ChatTemplate::from_model(dir.path()), InputError);
  write_template_file(dir / "tokenizer_config.json", R"({"chat_template": "{% if %}"})");
  try {
    ChatTemplate::from_model(dir.path());
    FAIL() << "parsed";
  } catch (const TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json: chat_template: template syntax error at line 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ChatTemplate::from_model(dir / "missing"), InputError);
}

TEST(ChatTemplateFromModelTest, GgufTemplateAndTokens) {
  TempDir dir("chat_template_gguf");
  GgufWriter w;
  w.add("general.architecture", gguf_string("llama"));
  w.add("tokenizer.chat_template", gguf_string("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"));
  w.add("tokenizer.ggml.tokens", gguf_string_array({"<unk>", "<s>", "</s>", "hi"}));
  w.add("tokenizer.ggml.bos_token_id", gguf_u32(1));
  w.add("tokenizer.ggml.eos_token_id", gguf_u32(2));
  w.write(dir / "m.gguf");
  std::optional<ChatTemplate> t = ChatTemplate::from_model(dir / "m.gguf");
  ASSERT_TRUE(t);
  ChatInput in;
  in.messages = OJson::parse(R"([{"role": "user", "content": "hello"}])");
  EXPECT_EQ(t->render(in), "<s>hello</s>");

  GgufWriter bad;
  bad.add("tokenizer.chat_template", gguf_string("x"));
  bad.add("tokenizer.ggml.tokens", gguf_string_array({"a"}));
  bad.add("tokenizer.ggml.bos_token_id", gguf_u32(7));
  bad.write(dir / "bad.gguf");
  EXPECT_THROW(ChatTemplate::from_model(dir / "bad.gguf"), InputError);

  GgufWriter none;
  none.add("general.architecture", gguf_string("llama"));
  none.write(dir / "none.gguf");
  EXPECT_FALSE(ChatTemplate::from_model(dir / "none.gguf"));
}

}  // namespace
}  // namespace plexus::testing

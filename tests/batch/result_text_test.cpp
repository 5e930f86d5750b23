// Chat lines and results' text against Llama 3's tokenizer and chat template: "messages" rendered
// as the server renders them (both line formats, each with its defaults), and stop strings and
// end-of-sequence ids handled as the server handles them.
#include <gtest/gtest.h>

#include "batch/request.h"
#include "batch/result_text.h"
#include "core/error.h"
#include "serve/chat_template.h"

namespace plexus::batch {
namespace {

const std::string kLlama3 = std::string(PLEXUS_GOLDEN_DIR) + "/tokenizers/llama3";

const Tokenizer& tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = Tokenizer::load(kLlama3);
  return *tok;
}

TEST(BatchResultText, StopStringsAndTheEndOfSequenceAsTheServer) {
  const Tokenizer& tok = tokenizer();
  const std::vector<std::int32_t> ids = tok.encode("Hello world, the harbour at dawn", false);
  const ResultText all = result_text(tok, ids, "length", {});
  EXPECT_EQ(all.text, "Hello world, the harbour at dawn");
  EXPECT_EQ(all.tokens, ids.size());
  EXPECT_EQ(all.finish_reason, "length");

  // " the" ends the text; the token that completed it is the last one counted.
  const ResultText cut = result_text(tok, ids, "length", {" harbour", " the"});
  EXPECT_EQ(cut.text, "Hello world,");
  EXPECT_EQ(cut.finish_reason, "stop");
  EXPECT_EQ(tok.decode(std::vector<std::int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(cut.tokens))),
            "Hello world, the");
  // A stop string across token boundaries.
  const ResultText across = result_text(tok, ids, "length", {"o wor"});
  EXPECT_EQ(across.text, "Hell");
  EXPECT_EQ(across.finish_reason, "stop");

  // A final end-of-sequence id: counted, not text.
  std::vector<std::int32_t> ended = ids;
  ended.push_back(*tok.eos_id());
  const ResultText eos = result_text(tok, ended, "stop", {});
  EXPECT_EQ(eos.text, all.text);
  EXPECT_EQ(eos.tokens, ended.size());
  EXPECT_EQ(eos.finish_reason, "stop");
}

TEST(BatchResultText, MessagesAreRenderedWithTheModelsTemplateInBothFormats) {
  const std::optional<ChatTemplate> tmpl = ChatTemplate::from_model(kLlama3);
  ASSERT_TRUE(tmpl.has_value());
  ParseContext c;
  c.tokenizer = &tokenizer();
  c.chat_template = &*tmpl;
  c.vocab_size = tokenizer().vocab_size();
  c.max_context = 512;
  c.eos_ids = {*tokenizer().eos_id()};
  c.defaults.max_tokens = 5;
  const std::string messages = R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])";
  ChatInput input;
  input.messages = nlohmann::ordered_json::parse(messages);
  const std::vector<std::int32_t> want = tokenizer().encode(tmpl->render(input), false);

  const BatchRequest own = parse_request_line(R"({"id": "a", "messages": )" + messages + "}", c);
  EXPECT_TRUE(own.chat);
  EXPECT_EQ(own.seq.prompt, want);
  EXPECT_EQ(own.seq.max_tokens, 5);  // --max-tokens
  EXPECT_TRUE(own.seq.sampling.greedy);

  const BatchRequest api = parse_request_line(
      R"({"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "x", "stop": "\n", "messages": )" +
          messages + "}}",
      c);
  EXPECT_TRUE(api.chat);
  EXPECT_EQ(api.id, Json("a"));
  EXPECT_EQ(api.seq.prompt, want);
  EXPECT_EQ(api.seq.max_tokens, 512 - static_cast<std::int64_t>(want.size()));  // the server's: the rest of the context
  EXPECT_FALSE(api.seq.sampling.greedy);  // the server's temperature 1
  EXPECT_EQ(api.stop, std::vector<std::string>{"\n"});
  ASSERT_TRUE(api.seq.stop_ids.has_value());
  EXPECT_EQ(*api.seq.stop_ids, c.eos_ids);

  // No template: a bad line saying so.
  c.chat_template = nullptr;
  EXPECT_THROW(parse_request_line(R"({"id": "a", "messages": )" + messages + "}", c), RefusedBody);
}

TEST(BatchResultText, StructuredOutputAndChoicesAreKeptForTheReplica) {
  // The grammar is checked here and travels as text (the replica compiles it over this
  // tokenizer's tokens); "n" with its choices.
  ParseContext c;
  c.tokenizer = &tokenizer();
  c.vocab_size = tokenizer().vocab_size();
  c.max_context = 512;
  c.eos_ids = {*tokenizer().eos_id()};
  const BatchRequest g = parse_request_line(R"({"id": "g", "prompt": "Hi", "grammar": "root ::= \"a\" | \"b\"", "n": 3})", c);
  EXPECT_EQ(g.grammar, "root ::= \"a\" | \"b\"");
  EXPECT_EQ(g.grammar_source, "grammar");
  EXPECT_EQ(g.choices, 3);
  const BatchRequest s = parse_request_line(
      R"({"id": "s", "prompt": "Hi", "response_format": {"type": "json_schema", "json_schema": {"schema": {"enum": [1, 2]}}}})", c);
  EXPECT_NE(s.grammar.find("root"), std::string::npos) << s.grammar;
  EXPECT_EQ(s.grammar_source, "response_format.json_schema.schema (as a grammar)");
  EXPECT_EQ(parse_request_line(R"({"id": "o", "prompt": "Hi", "response_format": {"type": "json_object"}})", c).grammar_source,
            "response_format json_object");
  const BatchRequest t = parse_request_line(R"({"id": "t", "prompt": "Hi", "response_format": {"type": "text"}})", c);
  EXPECT_TRUE(t.grammar.empty());
  EXPECT_EQ(t.choices, 1);
  // Without a tokenizer (ids only) the replica could not compile it: a bad line.
  ParseContext no_tokenizer = c;
  no_tokenizer.tokenizer = nullptr;
  try {
    parse_request_line(R"({"id": "i", "ids": [4], "grammar": "root ::= \"a\""})", no_tokenizer);
    ADD_FAILURE() << "a grammar without a tokenizer was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"grammar\" (structured output) needs the model's tokenizer.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace plexus::batch

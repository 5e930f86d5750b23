// The durable journal: appends survive reopening, a torn last line is cut, foreign files refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "batch/coordinator.h"
#include "batch/journal.h"
#include "core/error.h"
#include "core/mmap_file.h"
#include "test_util.h"

namespace plexus::batch {
namespace {

TEST(BatchJournal, AppendsAndResumes) {
  testing::TempDir dir("journal");
  const std::string path = dir / "out.jsonl";
  {
    Journal j(path, Journal::Mode::kResume);
    EXPECT_TRUE(j.existing().empty());
    j.append({{"id", "a"}, {"ids", {1, 2}}});
    j.append({{"id", 2}});
  }
  EXPECT_EQ(read_text_file_or_empty(path), "{\"id\":\"a\",\"ids\":[1,2]}\n{\"id\":2}\n");
  Journal j(path, Journal::Mode::kResume);
  ASSERT_EQ(j.existing().size(), 2u);
  EXPECT_EQ(j.existing()[1]["id"], Json(2));
  EXPECT_EQ(j.torn_bytes(), 0u);
  j.append({{"id", "c"}});
  EXPECT_EQ(read_text_file_or_empty(path), "{\"id\":\"a\",\"ids\":[1,2]}\n{\"id\":2}\n{\"id\":\"c\"}\n");
}

TEST(BatchJournal, OneWriterAtATime) {
  testing::TempDir dir("journal");
  const std::string path = dir / "out.jsonl";
  Journal first(path, Journal::Mode::kResume);
  try {
    Journal second(path, Journal::Mode::kResume);
    FAIL() << "two writers";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("another process"), std::string::npos) << e.what();
  }
}

TEST(BatchJournal, OnlyRegularFiles) {
  EXPECT_THROW(Journal("/dev/null", Journal::Mode::kResume), InputError);
}

TEST(BatchJournal, CutsATornLastLine) {
  testing::TempDir dir("journal");
  const std::string path = dir / "out.jsonl";
  std::ofstream(path) << "{\"id\":\"a\"}\n{\"id\":\"b\",\"ids\":[1,";
  {
    Journal j(path, Journal::Mode::kResume);
    EXPECT_EQ(j.existing().size(), 1u);
    EXPECT_EQ(j.torn_bytes(), 19u);
    j.append({{"id", "b"}});
  }
  EXPECT_EQ(read_text_file_or_empty(path), "{\"id\":\"a\"}\n{\"id\":\"b\"}\n");
  // A last line that ends with a newline but is not JSON (zeros after a crash) is torn too.
  std::ofstream(path, std::ios::app) << std::string(5, '\0') << "\n";
  Journal j(path, Journal::Mode::kResume);
  EXPECT_EQ(j.existing().size(), 2u);
  EXPECT_EQ(j.torn_bytes(), 6u);
  EXPECT_EQ(read_text_file_or_empty(path), "{\"id\":\"a\"}\n{\"id\":\"b\"}\n");
}

TEST(BatchJournal, RefusesAFileItDidNotWrite) {
  testing::TempDir dir("journal");
  const std::string path = dir / "out.jsonl";
  std::ofstream(path) << "id,text\n1,hello\n{\"id\":1}\n";
  try {
    Journal j(path, Journal::Mode::kResume);
    FAIL() << "accepted a CSV file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":1: not a JSON object"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_text_file_or_empty(path), "id,text\n1,hello\n{\"id\":1}\n");  // untouched
}

// A result line as the coordinator writes it: the marker first, then the result's fields.
std::string result_line(const std::string& id) {
  return "{\"object\":\"plexus.batch.result\",\"id\":\"" + id +
         "\",\"ids\":[1],\"finish_reason\":\"length\",\"prompt_tokens\":2,\"completion_tokens\":1}";
}

TEST(BatchJournal, EveryLineOfAnOutputIsOneResult) {
  testing::TempDir dir("journal");
  const std::string path = dir / "out.jsonl";
  {
    Journal j(path, Journal::Mode::kResume, &results_format());
    EXPECT_TRUE(j.existing().empty());
    j.append_line(result_line("a"));
  }
  EXPECT_EQ(read_text_file_or_empty(path), result_line("a") + "\n");  // no line that is not a result
  {
    Journal j(path, Journal::Mode::kResume, &results_format());
    ASSERT_EQ(j.existing().size(), 1u);
    EXPECT_EQ(j.existing()[0]["id"], Json("a"));
    j.append_line(result_line("b"));
  }
  EXPECT_EQ(read_text_file_or_empty(path), result_line("a") + "\n" + result_line("b") + "\n");
}

TEST(BatchJournal, OutputsWithTheFormat1HeaderAreStillResumed) {
  // Written by plexus versions whose outputs started with a header line: resumed, header kept.
  testing::TempDir dir("journal");
  const std::string path = dir / "out.jsonl";
  const std::string old = "{\"plexus_batch\":\"results\",\"format\":1}\n"
                          "{\"id\":\"a\",\"ids\":[1],\"finish_reason\":\"stop\",\"completion_tokens\":1}\n";
  std::ofstream(path) << old;
  {
    Journal j(path, Journal::Mode::kResume, &results_format());
    ASSERT_EQ(j.existing().size(), 1u);
    EXPECT_EQ(j.existing()[0]["id"], Json("a"));
    j.append_line(result_line("b"));
  }
  EXPECT_EQ(read_text_file_or_empty(path), old + result_line("b") + "\n");
  // ... but not a header followed by lines that are not results.
  const std::string mixed = old + "{\"id\":\"c\",\"prompt\":\"hi\"}\n";
  std::ofstream(path, std::ios::trunc) << mixed;
  EXPECT_THROW(Journal(path, Journal::Mode::kResume, &results_format()), InputError);
  EXPECT_EQ(read_text_file_or_empty(path), mixed);
}

TEST(BatchJournal, ResultsWrittenBeforeTheHeaderExistedAreStillResumed) {
  testing::TempDir dir("journal");
  const std::string path = dir / "out.jsonl";
  const std::string old = "{\"id\":\"a\",\"ids\":[1],\"finish_reason\":\"stop\",\"completion_tokens\":1}\n{\"id\":\"b\",\"id";
  std::ofstream(path) << old;
  Journal j(path, Journal::Mode::kResume, &results_format());
  EXPECT_EQ(j.existing().size(), 1u);
  EXPECT_EQ(j.torn_bytes(), 13u);  // {"id":"b","id
}

TEST(BatchJournal, RequestLinesAreNotResultsAndAreLeftUntouched) {
  // The input given as the output: every line a JSON object, none a result.
  testing::TempDir dir("journal");
  const std::string path = dir / "in.jsonl";
  const std::string requests = "{\"id\":\"a\",\"ids\":[1,2]}\n{\"id\":\"b\",\"prompt\":\"hi\",\"max_tokens\":3}";
  std::ofstream(path) << requests;
  for (int attempt = 0; attempt < 2; ++attempt) {  // a refused file is unlocked again (found by fuzz/batch_resume)
    try {
      Journal j(path, Journal::Mode::kResume, &results_format());
      FAIL() << "resumed a request file";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path + ":1: not one of plexus batch's result lines"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(read_text_file_or_empty(path), requests);  // the last line was not cut as torn
}

TEST(BatchJournal, AOneLineFileThatIsNotOursIsNotCutAsTorn) {
  testing::TempDir dir("journal");
  const std::string path = dir / "notes.txt";
  std::ofstream(path) << "my notes, not JSON";
  EXPECT_THROW(Journal(path, Journal::Mode::kResume, &results_format()), InputError);
  EXPECT_EQ(read_text_file_or_empty(path), "my notes, not JSON");
  // One request without its final newline (a request file given as the output) is not ours either.
  const std::string request = "{\"id\":\"a\",\"ids\":[1,2],\"max_tokens\":4}";
  std::ofstream(path, std::ios::trunc) << request;
  EXPECT_THROW(Journal(path, Journal::Mode::kResume, &results_format()), InputError);
  EXPECT_EQ(read_text_file_or_empty(path), request);
  // The first result torn by a crash while it was written is cut (its request runs again) ...
  const std::string first = result_line("a");
  for (const std::size_t n : {std::size_t{5}, first.size() / 2, first.size()}) {
    std::ofstream(path, std::ios::trunc) << first.substr(0, n);
    Journal j(path, Journal::Mode::kResume, &results_format());
    EXPECT_TRUE(j.existing().empty());
    EXPECT_EQ(j.torn_bytes(), n);
    EXPECT_EQ(read_text_file_or_empty(path), "");
  }
  // ... and so is the header of the older format, torn while it was written (nothing comes back).
  std::ofstream(path, std::ios::trunc) << "{\"plexus_batch\":\"resu";
  {
    Journal j(path, Journal::Mode::kResume, &results_format());
    EXPECT_TRUE(j.existing().empty());
  }
  EXPECT_EQ(read_text_file_or_empty(path), "");
}

TEST(BatchJournal, OutputThatIsTheInputIsRefusedByInode) {
  testing::TempDir dir("journal");
  const std::string in = dir / "in.jsonl";
  std::ofstream(in) << "{\"id\":1,\"ids\":[1]}\n";
  std::filesystem::create_symlink(in, dir / "link.jsonl");
  std::filesystem::create_hard_link(in, dir / "hard.jsonl");
  std::filesystem::create_directories(dir / "sub");
  for (const std::string& out : {in, std::string(dir / "link.jsonl"), std::string(dir / "hard.jsonl"),
                                 std::string(dir / "sub/../in.jsonl")}) {
    EXPECT_THROW(check_output_is_not_input(in, out), InputError) << out;
  }
  std::filesystem::create_symlink(in, dir / "o.errors.jsonl");
  EXPECT_THROW(check_output_is_not_input(in, dir / "o.jsonl"), InputError);
  EXPECT_NO_THROW(check_output_is_not_input(in, dir / "fresh.jsonl"));
}

TEST(BatchJournal, TruncateStartsEmptyAndErrorsPathIsBesideTheOutput) {
  testing::TempDir dir("journal");
  const std::string path = dir / "e.jsonl";
  std::ofstream(path) << "{\"id\":1}\n";
  Journal j(path, Journal::Mode::kTruncate);
  EXPECT_TRUE(j.existing().empty());
  EXPECT_EQ(read_text_file_or_empty(path), "");
  EXPECT_EQ(errors_path("/x/out.jsonl"), "/x/out.errors.jsonl");
  EXPECT_EQ(errors_path("out"), "out.errors.jsonl");
}

}  // namespace
}  // namespace plexus::batch

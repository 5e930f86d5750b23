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

// Atomic report files: whole or absent, no temporary file left on success or failure, and the
// writable-directory probe that runs before anything is measured.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace plexus {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& tag) {
  const fs::path d = fs::path(::testing::TempDir()) / ("plexus-atomic-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

TEST(AtomicFile, ReplacesTheFileWholeAndLeavesNoTemporary) {
  const std::string dir = fresh_dir("replace");
  const std::string path = dir + "/r.json";
  std::ofstream(path) << "old";
  write_file_atomically(path, "{\"new\": true}\n");
  EXPECT_EQ(slurp(path), "{\"new\": true}\n");
  EXPECT_EQ(names(dir), std::vector<std::string>{"r.json"});
  fs::remove_all(dir);
}

TEST(AtomicFile, UncommittedWritesLeaveTheOldFileAndNoTemporary) {
  const std::string dir = fresh_dir("abandon");
  const std::string path = dir + "/r.csv";
  std::ofstream(path) << "a,b\n1,2\n";
  {
    AtomicFile f(path);
    f.write("a,b\n1,2\n3,");  // e.g. an exception or a signal before commit()
    EXPECT_TRUE(is_atomic_temp_name(fs::path(f.temp_path()).filename().string()));
    EXPECT_TRUE(fs::exists(f.temp_path()));
  }
  EXPECT_EQ(slurp(path), "a,b\n1,2\n");
  EXPECT_EQ(names(dir), std::vector<std::string>{"r.csv"});
  fs::remove_all(dir);
}

TEST(AtomicFile, UnwritableDirectoryNamesThePath) {
  const std::string dir = fresh_dir("missing");
  try {
    write_file_atomically(dir + "/no/such/dir/r.json", "{}");
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/no/such/dir/r.json"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// A pid that no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// Sets `path`'s modification time a minute back: a temporary file no writer touched lately.
void age(const std::string& path) { fs::last_write_time(path, fs::last_write_time(path) - std::chrono::minutes(1)); }

TEST(AtomicFile, StaleTemporariesOfDeadWritersAreRemovedOnlyThose) {
  const std::string dir = fresh_dir("stale");
  const std::string dead = ".a.gguf.tmp-" + std::to_string(dead_pid()) + "-0";
  const std::string alive = ".b.gguf.tmp-" + std::to_string(::getppid()) + "-3";  // our parent lives
  const std::string not_ours = ".c.tmp-notapid-1";
  for (const std::string& n : {dead, alive, not_ours}) {
    std::ofstream(dir + "/" + n) << "x";
    age(dir + "/" + n);
  }
  fs::create_directory(dir + "/.d.tmp-" + std::to_string(dead_pid()) + "-0");  // a directory: never ours
  {
    AtomicFile writing(dir + "/e.json");  // its own temporary is locked while it lives
    EXPECT_EQ(remove_stale_temporaries(dir), 0);
    writing.write("{}");
    writing.commit();
  }
  std::vector<std::string> left = names(dir);
  std::sort(left.begin(), left.end());
  std::vector<std::string> want = {".b.gguf.tmp-" + std::to_string(::getppid()) + "-3", ".c.tmp-notapid-1", "e.json"};
  for (const std::string& n : left)
    if (n.rfind(".d.tmp-", 0) == 0) want.push_back(n);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(left, want);  // the dead writer's file went when e.json's AtomicFile started
}

// A writer whose pid this process cannot see (another pid namespace: kill() says ESRCH) holds its
// temporary file locked from the moment the name exists; a fresh unlocked one may be a writer
// between creating and locking it (where the file system has no O_TMPFILE), so only an old one
// goes.
TEST(AtomicFile, AnUnlockedTemporaryIsRemovedOnlyWhenOld) {
  const std::string dir = fresh_dir("fresh");
  const std::string fresh = dir + "/.a.json.tmp-" + std::to_string(dead_pid()) + "-0";
  const std::string old = dir + "/.b.json.tmp-" + std::to_string(dead_pid()) + "-0";
  std::ofstream(fresh) << "{";
  std::ofstream(old) << "{";
  age(old);
  EXPECT_EQ(remove_stale_temporaries(dir), 1);
  EXPECT_TRUE(fs::exists(fresh)) << "a fresh temporary file was taken for a dead writer's";
  EXPECT_FALSE(fs::exists(old));
  // Aged, it goes too.
  age(fresh);
  EXPECT_EQ(remove_stale_temporaries(dir), 1);
  EXPECT_TRUE(names(dir).empty());
  fs::remove_all(dir);
}

// The temporary file is locked as soon as its name exists, however old it looks, until commit()
// has renamed it: a cleaner never takes a live writer's file.
TEST(AtomicFile, ALiveWritersTemporaryIsLockedUntilItsRename) {
  const std::string dir = fresh_dir("locked");
  AtomicFile f(dir + "/r.json");
  f.write("{}");
  age(f.temp_path());
  // Seen from a child: its own pid test skips this process's files, the lock must hold them.
  const std::string temp = f.temp_path();
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
    ::_exit(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the temporary file was not locked";
  f.commit();
  EXPECT_EQ(slurp(dir + "/r.json"), "{}");
  fs::remove_all(dir);
}

TEST(EnsureWritableDir, CreatesParentsAndLeavesNoProbe) {
  const std::string dir = fresh_dir("probe");
  ensure_writable_dir(dir + "/a/b", "--output-dir");
  EXPECT_TRUE(fs::is_directory(dir + "/a/b"));
  EXPECT_TRUE(names(dir + "/a/b").empty());
  fs::remove_all(dir);
}

TEST(EnsureWritableDir, APathUnderAFileIsBadInputNamingIt) {
  const std::string dir = fresh_dir("file");
  std::ofstream(dir + "/file") << "x";
  try {
    ensure_writable_dir(dir + "/file/out", "--output-dir");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--output-dir '" + dir + "/file/out'"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace plexus

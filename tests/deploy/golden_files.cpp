#include "golden_files.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace plexus::deploy::testing {

namespace fs = std::filesystem;

namespace {

fs::path golden_dir(const std::string& name) { return fs::path(PLEXUS_SOURCE_DIR) / "tests/deploy/golden" / name; }

bool updating() {
  const char* v = std::getenv("PLEXUS_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string golden_text(const std::string& name, const std::string& path) { return read_all(golden_dir(name) / path); }

void expect_golden(const std::vector<GeneratedFile>& files, const std::string& name) {
  const fs::path dir = golden_dir(name);
  if (updating()) {
    fs::remove_all(dir);
    for (const GeneratedFile& f : files) {
      fs::create_directories((dir / f.path).parent_path());
      std::ofstream(dir / f.path, std::ios::binary) << f.content;
    }
    return;
  }
  std::set<std::string> expected;
  if (fs::is_directory(dir)) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) expected.insert(fs::relative(e.path(), dir).string());
    }
  }
  for (const GeneratedFile& f : files) {
    ASSERT_TRUE(expected.count(f.path)) << name << ": " << f.path << " has no golden copy in " << dir
                                        << " (run with PLEXUS_UPDATE_GOLDEN=1 and review the new file)";
    EXPECT_EQ(f.content, read_all(dir / f.path)) << name << "/" << f.path << " differs from its golden copy "
                                                 << "(PLEXUS_UPDATE_GOLDEN=1 rewrites it: review the diff)";
    expected.erase(f.path);
  }
  for (const std::string& left : expected) ADD_FAILURE() << name << ": golden " << left << " was not generated";
}

}  // namespace plexus::deploy::testing

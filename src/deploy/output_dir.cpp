// write_deployment: every file of a deployment appears in --out at once, or none does.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "deploy/deployment.h"

namespace plexus::deploy {

namespace fs = std::filesystem;

namespace {

// The list of files a deploy wrote, kept in its output directory: a later deploy replaces a
// directory holding only these, never one with anything else.
constexpr const char* kManifestName = ".plexus-deploy";

void write_synced(const fs::path& path, const std::string& content, bool executable) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, executable ? 0755 : 0644);
  if (fd < 0) throw RuntimeError("deploy: cannot create " + path.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw RuntimeError("deploy: cannot write " + path.string() + ": " + (err == ENOSPC ? "disk full" : std::strerror(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw RuntimeError("deploy: cannot sync " + path.string() + ": " + std::strerror(errno));
}

// Files under `dir` (relative paths), the manifest itself left out.
std::set<std::string> files_under(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_directory()) out.insert(fs::relative(e.path(), dir).string());
  }
  out.erase(kManifestName);
  return out;
}

// An existing --out may be replaced when it is empty or holds only what its manifest lists.
void check_replaceable(const fs::path& out) {
  if (!fs::is_directory(out)) throw InputError("--out " + out.string() + " exists and is not a directory");
  const std::set<std::string> present = files_under(out);
  if (present.empty()) return;
  std::set<std::string> listed;
  std::ifstream manifest(out / kManifestName);
  for (std::string line; std::getline(manifest, line);) listed.insert(line);
  for (const std::string& f : present) {
    if (!listed.count(f)) {
      throw InputError("--out " + out.string() + " holds " + f +
                       ", which plexus deploy did not write: give a new or empty directory (nothing was changed)");
    }
  }
}

// Removes a temporary directory unless released.
struct TempDir {
  fs::path path;
  bool keep = false;
  ~TempDir() {
    std::error_code ec;
    if (!keep && !path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

void write_deployment(const std::vector<GeneratedFile>& files, const std::string& out_dir) {
  if (out_dir.empty()) throw InputError("--out must not be empty");
  const fs::path out = fs::absolute(out_dir).lexically_normal();
  const fs::path target = out.filename().empty() ? out.parent_path() : out;
  const fs::path parent = target.parent_path();
  std::error_code ec;
  if (fs::exists(target)) check_replaceable(target);
  fs::create_directories(parent, ec);
  if (ec) throw InputError("--out " + out_dir + ": cannot create " + parent.string() + ": " + ec.message());

  const std::string stem = "." + target.filename().string() + ".deploy-" + std::to_string(::getpid());
  TempDir staging{parent / (stem + "-new")};
  if (!fs::create_directory(staging.path, ec) || ec) {
    throw InputError("--out " + out_dir + ": cannot write in " + parent.string() + ": " + (ec ? ec.message() : "exists"));
  }
  std::string manifest;
  for (const GeneratedFile& f : files) {
    const fs::path p = staging.path / f.path;
    fs::create_directories(p.parent_path());
    write_synced(p, f.content, f.executable);
    manifest += f.path + "\n";
  }
  write_synced(staging.path / kManifestName, manifest, false);

  // The old directory steps aside, the new one takes its name, the old one goes.
  TempDir old{};
  if (fs::exists(target)) {
    old.path = parent / (stem + "-old");
    fs::rename(target, old.path, ec);
    if (ec) throw RuntimeError("deploy: cannot move the old " + target.string() + " aside: " + ec.message());
  }
  fs::rename(staging.path, target, ec);
  if (ec) {
    old.keep = true;  // the old files go back under their name, never lost
    if (!old.path.empty()) fs::rename(old.path, target, ec);
    throw RuntimeError("deploy: cannot rename the new files into " + target.string());
  }
  staging.keep = true;
}

}  // namespace plexus::deploy

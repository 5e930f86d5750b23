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
#include "deploy/escape.h"

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

std::string shown(const fs::path& p) { return "'" + one_line(p.string()) + "'"; }

// "--out DIR: " with the reason a directory cannot be read.
[[noreturn]] void unreadable(const std::string& given, const fs::path& what, const std::error_code& ec) {
  throw InputError("--out " + one_line(given) + ": cannot read " + shown(what) + ": " + ec.message() +
                   ": give a directory plexus deploy may write, or a new one");
}

// An existing --out may be replaced when it is an empty directory, or one a deploy wrote: its
// manifest lists every regular file in it, and each directory in it holds a listed file. Anything
// else (a file of the user's, an empty or foreign subdirectory, a symbolic link, a device) is
// refused naming the first one met, never a file deep inside an unrelated directory: the walk only
// enters directories the manifest accounts for.
void check_replaceable(const fs::path& out, const std::string& given) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out, ec);
  if (ec) unreadable(given, out, ec);
  if (fs::is_symlink(st)) {
    const fs::path to = fs::read_symlink(out, ec);
    throw InputError("--out " + one_line(given) + " is a symbolic link" + (ec ? "" : " to " + shown(to)) +
                     ": plexus deploy replaces its --out directory as a whole, link included; give the directory itself or a new one");
  }
  if (!fs::is_directory(st)) throw InputError("--out " + one_line(given) + " exists and is not a directory: give a new or empty directory");
  const auto refuse = [&](const std::string& why) {
    throw InputError("--out " + one_line(given) + " " + why + ": give a new or empty directory (nothing was changed)");
  };

  std::set<std::string> top;
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) top.insert(it->path().filename().string());
  if (ec) unreadable(given, out, ec);
  if (top.empty()) return;
  const fs::path manifest_path = out / kManifestName;
  if (!fs::is_regular_file(fs::symlink_status(manifest_path, ec))) {
    std::string some;
    int listed_names = 0;
    for (const std::string& name : top) {
      if (listed_names++ == 3) break;
      some += (some.empty() ? "" : ", ") + shown(name);
    }
    refuse("is not empty and is not a directory plexus deploy wrote (no " + std::string(kManifestName) + " list in it; it holds " +
           std::to_string(top.size()) + (top.size() == 1 ? " entry: " : " entries, e.g. ") + some + ")");
  }

  std::set<std::string> listed, listed_dirs;
  std::ifstream manifest(manifest_path);
  for (std::string line; std::getline(manifest, line);) {
    if (line.empty()) continue;
    listed.insert(line);
    for (fs::path p = fs::path(line).parent_path(); !p.empty(); p = p.parent_path()) listed_dirs.insert(p.string());
  }
  for (fs::recursive_directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string rel = it->path().lexically_relative(out).string();
    const fs::file_status s = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_symlink(s)) refuse("holds the symbolic link " + shown(rel) + ", which plexus deploy did not write");
    if (fs::is_directory(s)) {
      if (!listed_dirs.count(rel)) refuse("holds the directory " + shown(rel) + ", which plexus deploy did not write");
    } else if (!fs::is_regular_file(s) || (rel != kManifestName && !listed.count(rel))) {
      refuse("holds " + shown(rel) + ", which plexus deploy did not write");
    }
  }
  if (ec) unreadable(given, out, ec);
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
  std::error_code ec;
  const fs::path out = fs::absolute(out_dir, ec).lexically_normal();
  if (ec) throw InputError("--out " + one_line(out_dir) + ": " + ec.message());
  const fs::path target = out.filename().empty() ? out.parent_path() : out;
  const fs::path parent = target.parent_path();
  const bool exists = fs::symlink_status(target, ec).type() != fs::file_type::not_found;
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw InputError("--out " + one_line(out_dir) + ": cannot reach " + shown(target) + ": " + ec.message());
  }
  if (exists) check_replaceable(target, out_dir);
  fs::create_directories(parent, ec);
  if (ec) throw InputError("--out " + one_line(out_dir) + ": cannot create " + shown(parent) + ": " + ec.message());

  const std::string stem = "." + target.filename().string() + ".deploy-" + std::to_string(::getpid());
  TempDir staging{parent / (stem + "-new")};
  if (!fs::create_directory(staging.path, ec) || ec) {
    throw InputError("--out " + one_line(out_dir) + ": cannot write in " + shown(parent) + ": " + (ec ? ec.message() : "exists"));
  }
  if (exists) {
    // The replacement keeps the directory's permissions (an empty directory made for the files).
    const fs::perms perms = fs::status(target, ec).permissions();
    if (!ec) fs::permissions(staging.path, perms, ec);
  }
  std::string manifest;
  for (const GeneratedFile& f : files) {
    const fs::path p = staging.path / f.path;
    fs::create_directories(p.parent_path(), ec);
    if (ec) throw RuntimeError("deploy: cannot create " + p.parent_path().string() + ": " + ec.message());
    write_synced(p, f.content, f.executable);
    manifest += f.path + "\n";
  }
  write_synced(staging.path / kManifestName, manifest, false);

  // The old directory steps aside, the new one takes its name, the old one goes.
  TempDir old{};
  if (exists) {
    old.path = parent / (stem + "-old");
    fs::rename(target, old.path, ec);
    if (ec) throw RuntimeError("deploy: cannot move the old " + target.string() + " aside: " + ec.message());
  }
  fs::rename(staging.path, target, ec);
  if (ec) {
    old.keep = true;  // the old files go back under their name, never lost
    std::string old_files;
    if (!old.path.empty()) {
      std::error_code back;
      fs::rename(old.path, target, back);
      old_files = back ? "; putting the old files back failed too (" + back.message() + "): they are in " + old.path.string() +
                             ": move that directory back to " + target.string()
                       : "; the old files are back in place";
    }
    throw RuntimeError("deploy: cannot rename the new files into " + target.string() + ": " + ec.message() + old_files);
  }
  staging.keep = true;
}

}  // namespace plexus::deploy

// dlopen/dlsym of NCCL, once per process.
#include "comm/cuda/nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "core/error.h"

namespace plexus::cuda {

namespace {

struct Loaded {
  std::unique_ptr<NcclLibrary> lib;
  std::string why;
};

template <class F>
bool resolve(void* handle, const char* name, F& out, std::string* missing) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  if (out == nullptr) *missing += (missing->empty() ? "" : ", ") + std::string(name);
  return out != nullptr;
}

}  // namespace

const NcclLibrary* NcclLibrary::find(std::string* why) {
  static const Loaded loaded = [] {
    Loaded l;
    std::vector<std::string> candidates;
    if (const char* e = std::getenv("PLEXUS_NCCL_LIBRARY"); e != nullptr && *e != '\0') candidates.emplace_back(e);
    candidates.emplace_back("libnccl.so.2");
    candidates.emplace_back("libnccl.so");
    void* handle = nullptr;
    std::string path;
    for (const std::string& c : candidates) {
      handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) {
        path = c;
        break;
      }
      const char* err = dlerror();
      l.why += (l.why.empty() ? "" : "; ") + (err != nullptr ? std::string(err) : c + ": cannot be loaded");
    }
    if (handle == nullptr) return l;
    std::unique_ptr<NcclLibrary> lib(new NcclLibrary());
    lib->handle_ = handle;
    lib->path_ = path;
    std::string missing;
    resolve(handle, "ncclGetVersion", lib->get_version, &missing);
    resolve(handle, "ncclGetUniqueId", lib->get_unique_id, &missing);
    resolve(handle, "ncclCommInitRank", lib->comm_init_rank, &missing);
    resolve(handle, "ncclCommInitAll", lib->comm_init_all, &missing);
    resolve(handle, "ncclCommDestroy", lib->comm_destroy, &missing);
    resolve(handle, "ncclCommAbort", lib->comm_abort, &missing);
    resolve(handle, "ncclGetErrorString", lib->error_string, &missing);
    resolve(handle, "ncclAllReduce", lib->all_reduce, &missing);
    resolve(handle, "ncclAllGather", lib->all_gather, &missing);
    resolve(handle, "ncclBroadcast", lib->broadcast, &missing);
    if (!missing.empty()) {
      l.why = path + " lacks " + missing + " (an NCCL older than 2.0?)";
      return l;
    }
    if (lib->get_version(&lib->version_) != ncclSuccess) lib->version_ = 0;
    l.lib = std::move(lib);
    return l;
  }();
  if (loaded.lib == nullptr && why != nullptr) *why = loaded.why;
  return loaded.lib.get();
}

const NcclLibrary& NcclLibrary::get() {
  std::string why;
  const NcclLibrary* lib = find(&why);
  if (lib == nullptr) {
    throw RuntimeError("NCCL cannot be loaded (" + why +
                       "): install NCCL (libnccl2) or set PLEXUS_NCCL_LIBRARY to its libnccl.so.2");
  }
  return *lib;
}

void NcclLibrary::check(ncclResult_t r, const char* call, const std::string& what) const {
  if (r == ncclSuccess) return;
  throw RuntimeError(what + ": " + call + " failed: " + (error_string != nullptr ? error_string(r) : "NCCL error") +
                     " (NCCL " + std::to_string(static_cast<int>(r)) + "; NCCL_DEBUG=WARN says more)");
}

}  // namespace plexus::cuda

// dlopen/dlsym of NCCL, once per process.
#include "comm/cuda/nccl_library.h"

#include <cstdlib>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/shared_library.h"

namespace plexus::cuda {

namespace {

struct Loaded {
  std::unique_ptr<NcclLibrary> lib;
  std::string why;
};

}  // namespace

const NcclLibrary* NcclLibrary::find(std::string* why) {
  static const Loaded loaded = [] {
    Loaded l;
    std::vector<std::string> candidates;
    if (const char* e = std::getenv("PLEXUS_NCCL_LIBRARY"); e != nullptr && *e != '\0') candidates.emplace_back(e);
    candidates.emplace_back("libnccl.so.2");
    candidates.emplace_back("libnccl.so");
    std::string path;
    void* handle = open_first_library(candidates, &path, &l.why);
    if (handle == nullptr) return l;
    std::unique_ptr<NcclLibrary> lib(new NcclLibrary());
    lib->handle_ = handle;
    lib->path_ = path;
    std::string missing;
    resolve_symbol(handle, "ncclGetVersion", lib->get_version, &missing);
    resolve_symbol(handle, "ncclGetUniqueId", lib->get_unique_id, &missing);
    resolve_symbol(handle, "ncclCommInitRank", lib->comm_init_rank, &missing);
    resolve_symbol(handle, "ncclCommInitAll", lib->comm_init_all, &missing);
    resolve_symbol(handle, "ncclCommDestroy", lib->comm_destroy, &missing);
    resolve_symbol(handle, "ncclCommAbort", lib->comm_abort, &missing);
    resolve_symbol(handle, "ncclGetErrorString", lib->error_string, &missing);
    resolve_symbol(handle, "ncclAllReduce", lib->all_reduce, &missing);
    resolve_symbol(handle, "ncclAllGather", lib->all_gather, &missing);
    resolve_symbol(handle, "ncclBroadcast", lib->broadcast, &missing);
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

// NCCL loaded at run time (dlopen of libnccl.so.2, as NVML is): a plexus built against nccl.h
// still starts on a machine without NCCL, and only a tensor-parallel run with one rank per GPU
// needs it. Compiled when CMake finds nccl.h (PLEXUS_HAVE_NCCL).
#pragma once
#include <nccl.h>

#include <string>

namespace plexus::cuda {

class NcclLibrary {
 public:
  // The process's NCCL, loaded on first use ($PLEXUS_NCCL_LIBRARY, else libnccl.so.2, else
  // libnccl.so). nullptr, with *why set (the loader's message), when it cannot be loaded.
  static const NcclLibrary* find(std::string* why);
  // The same; RuntimeError with the loader's message when NCCL cannot be loaded.
  static const NcclLibrary& get();

  // Throws RuntimeError "<what>: <call> failed: <NCCL's message>" unless `r` is ncclSuccess.
  void check(ncclResult_t r, const char* call, const std::string& what) const;

  const std::string& path() const { return path_; }
  int version() const { return version_; }  // NCCL_VERSION_CODE of the loaded library

  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;

 private:
  NcclLibrary() = default;
  void* handle_ = nullptr;  // never closed: NCCL's threads may outlive any owner
  std::string path_;
  int version_ = 0;
};

}  // namespace plexus::cuda

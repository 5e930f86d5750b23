// ROCm SMI (librocm_smi64.so) loaded at run time with dlopen, for AMD GPUs. Declarations of the
// few entry points plexus calls, written from AMD's documented C interface; all optional.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace plexus {

class RocmSmiLibrary {
 public:
  // Loads `path` ("" = librocm_smi64.so, then /opt/rocm/lib/librocm_smi64.so) and calls
  // rsmi_init. nullptr and *why on failure.
  static std::unique_ptr<RocmSmiLibrary> open(const std::string& path, std::string* why);
  ~RocmSmiLibrary();
  RocmSmiLibrary(const RocmSmiLibrary&) = delete;
  RocmSmiLibrary& operator=(const RocmSmiLibrary&) = delete;

  using rsmi_status = int;  // 0 = success
  struct Api {
    rsmi_status (*shut_down)() = nullptr;
    rsmi_status (*num_devices)(std::uint32_t*) = nullptr;
    rsmi_status (*name)(std::uint32_t, char*, std::size_t) = nullptr;
    rsmi_status (*unique_id)(std::uint32_t, std::uint64_t*) = nullptr;
    rsmi_status (*memory_total)(std::uint32_t, int, std::uint64_t*) = nullptr;  // type 0 = VRAM
    rsmi_status (*memory_usage)(std::uint32_t, int, std::uint64_t*) = nullptr;
    rsmi_status (*power_average)(std::uint32_t, std::uint32_t, std::uint64_t*) = nullptr;  // microwatts
    rsmi_status (*power_cap)(std::uint32_t, std::uint32_t, std::uint64_t*) = nullptr;      // microwatts
    rsmi_status (*temperature)(std::uint32_t, std::uint32_t, int, std::int64_t*) = nullptr;  // millidegrees
    rsmi_status (*busy_percent)(std::uint32_t, std::uint32_t*) = nullptr;
    rsmi_status (*energy_count)(std::uint32_t, std::uint64_t*, float*, std::uint64_t*) = nullptr;
    rsmi_status (*link_type)(std::uint32_t, std::uint32_t, std::uint64_t*, int*) = nullptr;  // 1 PCIe, 2 XGMI
    rsmi_status (*p2p_accessible)(std::uint32_t, std::uint32_t, bool*) = nullptr;
  };
  const Api& api() const { return api_; }
  std::uint32_t device_count() const { return count_; }

 private:
  RocmSmiLibrary() = default;
  void* handle_ = nullptr;
  bool initialized_ = false;
  std::uint32_t count_ = 0;
  Api api_;
};

}  // namespace plexus

// The slice of the NVML C ABI plexus calls, declared by hand from NVIDIA's documented interface
// (plexus never links NVML; it dlopens it). Shared by the loader and the test's fake library.
#pragma once

extern "C" {

typedef int nvmlReturn_t;  // 0 = success
typedef struct nvmlDevice_st* nvmlDevice_t;

enum : int {
  kNvmlSuccess = 0,
  kNvmlErrorNotSupported = 3,
  kNvmlErrorNoPermission = 4,
  kNvmlErrorNotFound = 6,
  kNvmlErrorInsufficientSize = 7,
  kNvmlErrorGpuIsLost = 15,
  kNvmlErrorFunctionNotFound = 13,
};

typedef struct {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned int gpu;     // percent of time a kernel ran over the last sample period
  unsigned int memory;  // percent of time device memory was read or written
} nvmlUtilization_t;

typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

// nvmlProcessInfo_v2_t: one process's record from nvmlDeviceGetComputeRunningProcesses_v2.
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes, or kNvmlValueNotAvailable
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;

// nvmlProcessUtilizationSample_t: one process's utilisation over a recent sampling period.
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;  // microseconds (CPU clock)
  unsigned int smUtil, memUtil, encUtil, decUtil;  // percent
} nvmlProcessUtilizationSample_t;

// nvmlClockType_t
enum : int { kNvmlClockGraphics = 0, kNvmlClockSm = 1, kNvmlClockMem = 2 };
// nvmlTemperatureSensors_t
enum : int { kNvmlTemperatureGpu = 0 };
// nvmlGpuTopologyLevel_t: the closest common ancestor of two GPUs in the PCIe tree.
enum : int {
  kNvmlTopologyInternal = 0,
  kNvmlTopologySingle = 10,      // one PCIe switch
  kNvmlTopologyMultiple = 20,    // several PCIe switches, no host bridge
  kNvmlTopologyHostbridge = 30,  // the same host bridge
  kNvmlTopologyNode = 40,        // the same NUMA node, different host bridges
  kNvmlTopologySystem = 50,      // across CPU sockets
};
// nvmlGpuP2PCapsIndex_t and nvmlGpuP2PStatus_t
enum : int { kNvmlP2pCapsRead = 0, kNvmlP2pCapsNvlink = 2 };
enum : int { kNvmlP2pStatusOk = 0 };
constexpr unsigned kNvmlNvlinkMaxLinks = 18;

typedef nvmlReturn_t (*nvmlInit_v2_fn)();
typedef nvmlReturn_t (*nvmlShutdown_fn)();
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t*);
typedef nvmlReturn_t (*nvmlDeviceGetCudaComputeCapability_fn)(nvmlDevice_t, int*, int*);
typedef nvmlReturn_t (*nvmlDeviceGetPowerManagementLimit_fn)(nvmlDevice_t, unsigned int*);  // mW
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t, int, unsigned int*);        // MHz
typedef nvmlReturn_t (*nvmlDeviceGetMaxClockInfo_fn)(nvmlDevice_t, int, unsigned int*);     // MHz
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_v3_fn)(nvmlDevice_t, nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, int, unsigned int*);  // C
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_fn)(nvmlDevice_t, unsigned int*, void*);
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_v2_fn)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v2_t*);
typedef nvmlReturn_t (*nvmlDeviceGetProcessUtilization_fn)(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned int*,
                                                           unsigned long long);  // since this timestamp (us)
typedef nvmlReturn_t (*nvmlDeviceGetTopologyCommonAncestor_fn)(nvmlDevice_t, nvmlDevice_t, int*);
typedef nvmlReturn_t (*nvmlDeviceGetP2PStatus_fn)(nvmlDevice_t, nvmlDevice_t, int, int*);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t, unsigned int, int*);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_v2_fn)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t*);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t, unsigned int*);  // mW
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t, unsigned long long*);  // mJ
typedef nvmlReturn_t (*nvmlDeviceGetCurrentClocksThrottleReasons_fn)(nvmlDevice_t, unsigned long long*);

}  // extern "C"

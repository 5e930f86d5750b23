// PLEXUS_HOST_DEVICE marks a function compiled for the host and, under nvcc, the device too:
// the headers whose code the CPU oracles and the CUDA kernels share (philox.h, sampling_prefix.h).
#pragma once

#ifdef __CUDACC__
#define PLEXUS_HOST_DEVICE __host__ __device__
#else
#define PLEXUS_HOST_DEVICE
#endif

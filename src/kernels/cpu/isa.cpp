// Picks the kernel table for this CPU.
#include "kernels/cpu/isa.h"

#include <cstdlib>
#include <string>

namespace plexus {

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kGeneric: return true;
    case Isa::kAvx2:
#if defined(__x86_64__)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
      return false;
#endif
  }
  return false;
}

Isa best_isa() {
  const char* env = std::getenv("PLEXUS_ISA");
  if (env && std::string(env) == "generic") return Isa::kGeneric;
  if (isa_supported(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kGeneric;
}

const IsaKernels& isa_kernels(Isa isa) {
  switch (isa) {
    case Isa::kGeneric: return generic_kernels();
    case Isa::kAvx2: return avx2_kernels();
  }
  return generic_kernels();
}

}  // namespace plexus

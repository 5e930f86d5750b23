// Picks the kernel table for this CPU.
#include "kernels/cpu/isa.h"

#include <cstdlib>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace plexus {

namespace {
#if defined(__x86_64__)
// clang 14's __builtin_cpu_supports does not know "f16c": read CPUID leaf 1, ECX bit 29.
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
#endif
}  // namespace

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kGeneric: return true;
    case Isa::kAvx2:
#if defined(__x86_64__)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
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

// Picks the kernel table for this CPU.
#include "kernels/cpu/isa.h"

#include <atomic>
#include <cstdio>
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

// AVX-512 F, DQ, BW and VL (CPUID leaf 7 EBX bits 16, 17, 30, 31) and an OS that saves the
// opmask and zmm registers on context switches (XCR0 bits 1, 2, 5, 6, 7; OSXSAVE first).
bool has_avx512() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (1u << 27)) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0xE6u) != 0xE6u) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const unsigned need = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
  return (b & need) == need;
}

// AVX512_BF16: CPUID leaf 7 sub-leaf 1, EAX bit 5.
bool has_avx512_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) != 0;
}
// AVX512_VNNI: CPUID leaf 7 sub-leaf 0, ECX bit 11.
bool has_avx512_vnni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 11)) != 0;
}
#endif

Isa best_supported() {
  if (isa_supported(Isa::kAvx512)) return Isa::kAvx512;
  if (isa_supported(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kGeneric;
}
}  // namespace

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__)
  return isa_supported(Isa::kAvx512) && has_avx512_vnni();
#else
  return false;
#endif
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kGeneric: return true;
    case Isa::kAvx2:
#if defined(__x86_64__)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
#else
      return false;
#endif
    case Isa::kAvx512:
#if defined(__x86_64__)
      return isa_supported(Isa::kAvx2) && has_avx512();
#else
      return false;
#endif
    case Isa::kAvx512Bf16:
#if defined(__x86_64__)
      return isa_supported(Isa::kAvx512) && has_avx512_bf16();
#else
      return false;
#endif
  }
  return false;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kGeneric: return "generic";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx512Bf16: return "avx512bf16";
  }
  return "generic";
}

Isa best_isa() {
  const Isa best = best_supported();
  const char* env = std::getenv("PLEXUS_ISA");
  if (!env || !*env) return best;
  const std::string want(env);
  for (Isa isa : {Isa::kGeneric, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Bf16}) {
    if (want == isa_name(isa) && isa_supported(isa)) return isa;
  }
  static std::atomic<bool> warned{false};  // one line per process, however many engines start
  if (!warned.exchange(true)) {
    std::fprintf(stderr, "plexus: warning: PLEXUS_ISA=%s is %s; using %s\n", env,
                 want == "generic" || want == "avx2" || want == "avx512" || want == "avx512bf16"
                     ? "not supported by this CPU"
                     : "unknown (generic|avx2|avx512|avx512bf16)",
                 std::string(isa_name(best)).c_str());
  }
  return best;
}

const IsaKernels& isa_kernels(Isa isa) {
  switch (isa) {
    case Isa::kGeneric: return generic_kernels();
    case Isa::kAvx2: return avx2_kernels();
    case Isa::kAvx512: return avx512_kernels();
    case Isa::kAvx512Bf16: return avx512bf16_kernels();
  }
  return generic_kernels();
}

}  // namespace plexus

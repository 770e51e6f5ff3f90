#include "backend/cpu/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "common/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace minfer::cpu {
namespace {

// AMX-INT8 in CPUID, its tile state enabled by the OS (XCR0 bits 17-18), and this process's
// permission to use the tile data (Linux grants it on request, once per process).
bool amx_usable() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool tile = (d >> 24) & 1, int8 = (d >> 25) & 1;
  if (!tile || !int8) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return false;  // OSXSAVE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// F16C: CPUID.1:ECX bit 29 (Clang's __builtin_cpu_supports does not take "f16c"; its ymm state
// is AVX2's, checked with it).
bool f16c_cpuid() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && ((c >> 29) & 1);
#else
  return false;
#endif
}

// AVX-VNNI: CPUID.(EAX=7, ECX=1):EAX bit 4 (its ymm state is AVX2's, checked with it).
bool avx_vnni_cpuid() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 4) & 1);
#else
  return false;
#endif
}

// Bit i set: the CPU (and OS) runs the kernels of Isa(i).
unsigned detect() {
  unsigned m = 1u << int(Isa::Scalar);
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c_cpuid();
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512vnni");
  if (avx2) m |= 1u << int(Isa::Avx2);
  if (avx2 && avx_vnni_cpuid()) m |= 1u << int(Isa::AvxVnni);
  if (avx512) m |= 1u << int(Isa::Avx512);
  if (avx512 && amx_usable()) m |= 1u << int(Isa::Amx);
#endif
  return m;
}

unsigned supported_mask() {
  static const unsigned m = detect();
  return m;
}

// The best supported level at or below `want`.
Isa best_at_or_below(int want) {
  for (; want > 0; --want)
    if (isa_supported(static_cast<Isa>(want))) return static_cast<Isa>(want);
  return Isa::Scalar;
}

// MINFER_ISA=scalar|avx2|avxvnni|avx512|amx caps the path (to compare paths without
// rebuilding); unknown values are ignored.
int isa_from_env() {
  const char* e = std::getenv("MINFER_ISA");
  if (!e) return -1;
  constexpr std::string_view kNames[kIsaCount] = {"scalar", "avx2", "avxvnni", "avx512", "amx"};
  for (int i = 0; i < kIsaCount; ++i)
    if (e == kNames[i]) return static_cast<int>(best_at_or_below(i));
  return -1;
}

std::atomic<int> g_active{-2};  // -2: not read from the environment yet

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::AvxVnni: return "avx-vnni";
    case Isa::Avx512: return "avx512-vnni";
    case Isa::Amx: return "amx";
  }
  return "?";
}

Isa detected_isa() {
  static const Isa isa = best_at_or_below(kIsaCount - 1);
  return isa;
}

bool isa_supported(Isa isa) { return (supported_mask() >> int(isa)) & 1u; }

bool avx512_bf16() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = [] {
    __builtin_cpu_init();
    return isa_supported(Isa::Avx512) && __builtin_cpu_supports("avx512bf16");
  }();
  return has;
#else
  return false;
#endif
}

bool decode_prefetch(DecodeStream s) {
#if defined(__x86_64__) && defined(__linux__)
  // 0: not AMD; else the display family (base + extended, as AMD documents it).
  static const unsigned amd_family = [] {
    __builtin_cpu_init();
    if (!__builtin_cpu_is("amd")) return 0u;
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0u;
    const unsigned base = (a >> 8) & 0xf;
    return base == 0xf ? base + ((a >> 20) & 0xff) : base;
  }();
  if (amd_family == 0) return true;
  constexpr unsigned kZen5 = 0x1a;
  return s == DecodeStream::SuperBlocks && amd_family >= kZen5;
#else
  (void)s;
  return false;
#endif
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> v;
  for (int i = 0; i < kIsaCount; ++i)
    if (isa_supported(static_cast<Isa>(i))) v.push_back(static_cast<Isa>(i));
  return v;
}

Isa active_isa() {
  int a = g_active.load(std::memory_order_relaxed);
  if (a == -2) {
    int expected = -2;
    g_active.compare_exchange_strong(expected, isa_from_env(), std::memory_order_relaxed);
    a = g_active.load(std::memory_order_relaxed);
  }
  return a < 0 ? detected_isa() : static_cast<Isa>(a);
}

void force_isa(Isa isa) {
  if (!isa_supported(isa))
    fail("cpu: this CPU cannot run the {} kernels (best available: {})", isa_name(isa),
         isa_name(detected_isa()));
  g_active.store(static_cast<int>(isa), std::memory_order_relaxed);
}

void reset_isa() { g_active.store(-2, std::memory_order_relaxed); }

}  // namespace minfer::cpu

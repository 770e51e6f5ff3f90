#include "backend/cpu/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "common/error.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
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

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512vnni");
  if (avx512 && amx_usable()) return Isa::Amx;
  if (avx512) return Isa::Avx512;
  if (avx2) return Isa::Avx2;
#endif
  return Isa::Scalar;
}

// MINFER_ISA=scalar|avx2|avx512|amx caps the path (to compare paths without rebuilding); values
// above what the CPU supports, or unknown ones, are ignored.
int isa_from_env() {
  const char* e = std::getenv("MINFER_ISA");
  if (!e) return -1;
  const std::string_view v(e);
  int want = v == "scalar" ? 0 : v == "avx2" ? 1 : v == "avx512" ? 2 : v == "amx" ? 3 : -1;
  if (want > static_cast<int>(detected_isa())) want = static_cast<int>(detected_isa());
  return want;
}

std::atomic<int> g_active{-2};  // -2: not read from the environment yet

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512-vnni";
    case Isa::Amx: return "amx";
  }
  return "?";
}

Isa detected_isa() {
  static const Isa isa = detect();
  return isa;
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
  if (static_cast<int>(isa) > static_cast<int>(detected_isa()))
    fail("cpu: this CPU cannot run the {} kernels (best available: {})", isa_name(isa),
         isa_name(detected_isa()));
  g_active.store(static_cast<int>(isa), std::memory_order_relaxed);
}

void reset_isa() { g_active.store(-2, std::memory_order_relaxed); }

}  // namespace minfer::cpu

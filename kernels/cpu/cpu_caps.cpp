#include "kernels/cpu/cpu_caps.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <cerrno>

#if defined(__x86_64__) || defined(__i386__)
#define MINIRT_CAPS_X86 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define MINIRT_CAPS_X86 0
#endif

namespace minirt::cpu {

namespace {

#if MINIRT_CAPS_X86
// Linux's arch_prctl codes for dynamically enabled XSTATE (arch/x86/include/uapi/asm/prctl.h).
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
#endif

CpuFeatures read_features() {
  CpuFeatures f;
#if MINIRT_CAPS_X86
  unsigned a, b, c, d;
  if (__get_cpuid(0, &a, &b, &c, &d))
    f.amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "Auth" "enti" "cAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  bool osxsave = c & (1u << 27);
  bool fma = c & (1u << 12);
  uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  bool os_avx = (xcr0 & 0x6) == 0x6;                 // SSE and AVX state
  f.os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;     // opmask, ZMM_Hi256, Hi16_ZMM
  f.os_amx = (xcr0 & (3ull << 17)) == (3ull << 17);  // TILECFG, TILEDATA
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = os_avx && (b & (1u << 5));
  f.fma = os_avx && fma;
  f.avx512f = f.os_avx512 && (b & (1u << 16));
  f.avx512bw = f.os_avx512 && (b & (1u << 30));
  f.avx512vl = f.os_avx512 && (b & (1u << 31));
  f.avx512_vnni = f.os_avx512 && (c & (1u << 11));
  f.amx_bf16 = f.os_amx && (d & (1u << 22));
  f.amx_tile = f.os_amx && (d & (1u << 24));
  f.amx_int8 = f.os_amx && (d & (1u << 25));
  unsigned max_sub = a;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512_bf16 = f.os_avx512 && (a & (1u << 5));
  }
#endif
  return f;
}

struct Permission {
  bool granted = false;
  std::string why;
};

const Permission& permission() {
  static const Permission p = [] {
    Permission r;
#if MINIRT_CAPS_X86
    const CpuFeatures& f = cpu_features();
    if (!f.amx_tile) {
      r.why = "this CPU (or its OS) has no AMX tiles";
      return r;
    }
    unsigned long bits = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &bits) == 0 && (bits & (1ul << kXfeatureXtiledata))) {
      r.granted = true;
      return r;
    }
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
      int e = errno;
      r.why = std::string("Linux refused AMX tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM: ") +
              std::strerror(e) + "; an older kernel than 5.16 or a seccomp profile)";
      return r;
    }
    r.granted = true;
#else
    r.why = "not an x86 CPU";
#endif
    return r;
  }();
  return p;
}

std::atomic<int> g_forced{-1};

bool isa_from_name(const char* name, CpuIsa* isa) {
  for (int i = 0; i < kCpuIsaCount; ++i)
    if (std::strcmp(name, cpu_isa_name(static_cast<CpuIsa>(i))) == 0) {
      *isa = static_cast<CpuIsa>(i);
      return true;
    }
  return false;
}

// The environment's cap: MINIRT_CPU_ISA, else MINIRT_SGEMM_ISA (which names
// no bf16 set, so it also leaves bf16 out), else none (the best). A name
// that cannot be followed caps nothing here; the CPU backend refuses to
// start with cpu_env_isa_problem's sentence instead.
CpuIsa env_cap() {
  static const CpuIsa cap = [] {
    CpuIsa best = cpu_best_isa();
    const char* e = std::getenv("MINIRT_CPU_ISA");
    bool old = false;
    if (!e) {
      e = std::getenv("MINIRT_SGEMM_ISA");
      old = true;
    }
    CpuIsa want;
    if (!e || !isa_from_name(e, &want)) return best;
    if (old && want > CpuIsa::kAvx512) return best;
    return cpu_isa_supported(want) ? want : best;
  }();
  return cap;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kGeneric:
      return "generic";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx512Bf16:
      return "avx512_bf16";
    case CpuIsa::kAmx:
      return "amx";
  }
  return "generic";
}

const char* bf16_isa_name(Bf16Isa isa) {
  switch (isa) {
    case Bf16Isa::kNone:
      return "none";
    case Bf16Isa::kAvx512Bf16:
      return "avx512_bf16";
    case Bf16Isa::kAmx:
      return "amx";
  }
  return "none";
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = read_features();
  return f;
}

bool amx_permission(std::string* why) {
  const Permission& p = permission();
  if (!p.granted && why) *why = p.why;
  return p.granted;
}

bool cpu_isa_supported(CpuIsa isa) {
  const CpuFeatures& f = cpu_features();
  // The bf16 kernels also use AVX512BW/VL for their conversions and masks.
  bool avx512 = f.avx2 && f.fma && f.avx512f;
  bool bf16 = avx512 && f.avx512bw && f.avx512vl && f.avx512_bf16;
  switch (isa) {
    case CpuIsa::kGeneric:
      return true;
    case CpuIsa::kAvx2:
      return f.avx2 && f.fma;
    case CpuIsa::kAvx512:
      return avx512;
    case CpuIsa::kAvx512Bf16:
      return bf16;
    case CpuIsa::kAmx:
      return bf16 && f.amx_tile && f.amx_bf16 && amx_permission();
  }
  return false;
}

CpuIsa cpu_best_isa() {
  for (int i = kCpuIsaCount - 1; i > 0; --i)
    if (cpu_isa_supported(static_cast<CpuIsa>(i))) return static_cast<CpuIsa>(i);
  return CpuIsa::kGeneric;
}

CpuIsa cpu_isa() {
  int forced = g_forced.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<CpuIsa>(forced);
  return env_cap();
}

void cpu_force_isa(CpuIsa isa) { g_forced.store(static_cast<int>(isa), std::memory_order_relaxed); }
void cpu_reset_isa() { g_forced.store(-1, std::memory_order_relaxed); }

std::string cpu_env_isa_problem() {
  const char* e = std::getenv("MINIRT_CPU_ISA");
  if (!e) return {};
  CpuIsa want;
  if (!isa_from_name(e, &want))
    return std::string("MINIRT_CPU_ISA='") + e +
           "' is not one of generic, avx2, avx512, avx512_bf16, amx; set one of them or unset it";
  if (!cpu_isa_supported(want))
    return std::string("MINIRT_CPU_ISA=") + e + " asks for kernels this CPU cannot run (it has " +
           cpu_isa_name(cpu_best_isa()) + " at most); set a narrower one or unset it";
  return {};
}

Bf16Isa bf16_isa() {
  CpuIsa isa = cpu_isa();
  if (isa == CpuIsa::kAmx) return Bf16Isa::kAmx;
  if (isa == CpuIsa::kAvx512Bf16) return Bf16Isa::kAvx512Bf16;
  return Bf16Isa::kNone;
}

bool bf16_dot_outpaces_fma(Bf16Isa path) { return path == Bf16Isa::kAvx512Bf16 && cpu_features().amd; }

std::string bf16_isa_reason() {
  CpuIsa isa = cpu_isa();
  if (isa == CpuIsa::kAmx) return {};
  const CpuFeatures& f = cpu_features();
  CpuIsa best = cpu_best_isa();
  std::string capped;
  if (isa < best) {
    int forced = g_forced.load(std::memory_order_relaxed);
    const char* var = std::getenv("MINIRT_CPU_ISA") ? "MINIRT_CPU_ISA" : "MINIRT_SGEMM_ISA";
    capped = forced >= 0 ? std::string("the kernels are capped at ") + cpu_isa_name(isa) + " (by a test)"
                         : std::string(var) + "=" + cpu_isa_name(isa) + " caps the kernels below " + cpu_isa_name(best);
  }
  if (isa == CpuIsa::kAvx512Bf16) {
    if (!capped.empty()) return capped + ": AVX512_BF16 without AMX tiles";
    if (!f.amx_bf16 || !f.amx_tile) return "this CPU has no AMX-BF16 tiles: AVX512_BF16 without AMX tiles";
    std::string why;
    amx_permission(&why);
    return why + ": AVX512_BF16 without AMX tiles";
  }
  if (!capped.empty()) return capped + ", which leaves bf16 out";
  if (!f.avx512_bf16) return "this CPU has no AVX512_BF16 or AMX-BF16 instructions";
  return "this CPU lacks AVX512BW/VL, which minirt's bf16 kernels need beside AVX512_BF16";
}

std::string cpu_features_line() {
  const CpuFeatures& f = cpu_features();
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512_vnni, "avx512_vnni");
  add(f.avx512_bf16, "avx512_bf16");
  add(f.amx_tile, "amx_tile");
  add(f.amx_bf16, "amx_bf16");
  add(f.amx_int8, "amx_int8");
  if (s.empty()) s = "no vector extensions minirt uses";
  if (f.amx_tile) {
    std::string why;
    s += amx_permission(&why) ? " (amx permission: granted)" : " (amx permission: refused: " + why + ")";
  }
  return s;
}

}  // namespace minirt::cpu

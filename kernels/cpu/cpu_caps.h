// What the CPU (and the kernel running us) lets minirt's bf16 kernels use:
// AMX tiles (AMX-TILE + AMX-BF16, XCR0's tile state, and Linux's permission
// for this process, asked once with arch_prctl(ARCH_REQ_XCOMP_PERM)), then
// AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16), then nothing.
//
//   Bf16Isa isa = bf16_isa();               // what kernels made from now on use
//   if (isa == Bf16Isa::kNone) say(bf16_isa_reason());   // why bf16 is not run
//
// The ladder of named instruction sets, one per CPU, shared with the SGEMM
// (sgemm.h): generic < avx2 < avx512 < avx512_bf16 < amx. MINIRT_CPU_ISA
// names the highest the kernels may use (tests and benchmarks use it to run
// the lesser paths on a bigger CPU): `avx512` leaves bf16 out, `avx512_bf16`
// leaves AMX out, `avx2` and `generic` narrow the fp32 kernels too. The older
// MINIRT_SGEMM_ISA (generic, avx2, avx512) is still read where MINIRT_CPU_ISA
// is unset. A name the CPU cannot run is refused when a session starts
// (cpu_env_isa_problem), never quietly narrowed.
#pragma once

#include <cstdint>
#include <string>

namespace minirt::cpu {

enum class CpuIsa : uint8_t { kGeneric, kAvx2, kAvx512, kAvx512Bf16, kAmx };
const char* cpu_isa_name(CpuIsa isa);
constexpr int kCpuIsaCount = static_cast<int>(CpuIsa::kAmx) + 1;

// The bf16 instruction sets, best last.
enum class Bf16Isa : uint8_t { kNone, kAvx512Bf16, kAmx };
const char* bf16_isa_name(Bf16Isa isa);

// The CPU's feature bits, read once (CPUID and XGETBV; no permission asked).
struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512vl = false;
  bool avx512_bf16 = false, avx512_vnni = false;
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;
  bool os_avx512 = false;  // XCR0: opmask and ZMM state enabled by the OS
  bool os_amx = false;     // XCR0: TILECFG and TILEDATA enabled by the OS
  bool amd = false;        // CPUID's vendor is AuthenticAMD
};
const CpuFeatures& cpu_features();

// Asks Linux once per process for the AMX tile data state
// (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); true when granted (or already
// granted). `why` gets the kernel's refusal otherwise (an old kernel, a
// seccomp profile). Safe to call from any thread, any number of times.
bool amx_permission(std::string* why = nullptr);

// The best CpuIsa the hardware and OS allow (AMX only once permission is granted).
CpuIsa cpu_best_isa();
// The highest CpuIsa kernels may use: the best, capped by MINIRT_CPU_ISA (or
// MINIRT_SGEMM_ISA), or by cpu_force_isa (tests).
CpuIsa cpu_isa();
void cpu_force_isa(CpuIsa isa);  // caps the ISA for kernels made afterwards; must be supported
void cpu_reset_isa();
bool cpu_isa_supported(CpuIsa isa);

// Why MINIRT_CPU_ISA cannot be followed; empty when unset or followed
// (MINIRT_SGEMM_ISA's own check is sgemm_env_isa_problem).
std::string cpu_env_isa_problem();

// The bf16 path kernels made now would use, and why it is not better: empty
// for AMX; otherwise a sentence ("this CPU has no AVX512_BF16 or AMX-BF16
// instructions", "MINIRT_CPU_ISA=avx512 leaves bf16 out", "Linux refused
// AMX tile permission: ...").
Bf16Isa bf16_isa();
std::string bf16_isa_reason();

// Whether bf16 products on AVX512_BF16 alone (no tiles) do more work a cycle
// than float32 FMAs: on AMD (Zen 4 and later, whose zmm FMAs take two 256-bit
// halves) a vdpbf16ps does twice an FMA's multiply-adds at the same rate (232
// against 116 GFLOP/s a core on an EPYC, minirt-fma-peak); on Intel's cores
// the two FMA ports match it. The rules (nchwc_conv_heuristic) take bf16 there.
bool bf16_dot_outpaces_fma(Bf16Isa path);

// A word list of the CPU's capabilities for reports: "avx2 fma avx512f
// avx512_bf16 avx512_vnni amx_bf16 amx_int8 (amx permission: granted)".
std::string cpu_features_line();

}  // namespace minirt::cpu

// libminirt-cpuid-mask.so: LD_PRELOAD it to make a process see an x86 CPU
// without AVX-512 and AMX (and AVX-VNNI), so every engine in a benchmark --
// minirt, onnxruntime's MLAS, OpenVINO's oneDNN -- picks its AVX2 kernels on a
// machine that has more. bench/side_by_side.py --isa avx2 uses it to stand in
// for an AVX2-only host (issue 8's Zen 3) when none is at hand.
//
// How: Linux's arch_prctl(ARCH_SET_CPUID, 0) makes the CPUID instruction
// fault in this thread and every thread or child forked after it (CPUID
// faulting; /proc/cpuinfo lists it as cpuid_fault). The SIGSEGV handler
// checks that the faulting instruction is CPUID (0F A2), runs the real one
// with faulting briefly off, clears the feature bits below in the result and
// steps over the instruction. Any other SIGSEGV goes to the handler that was
// there before (or the default action). XGETBV is not trapped; engines test
// CPUID's feature bits and XCR0 together, so clearing the bits is enough.
// Code that read CPUID before this constructor ran (the dynamic loader,
// glibc's string-function selection) keeps what it saw; that is only
// memcpy/strlen, not compute kernels. execve resets the faulting, so a
// process started by a masked one needs LD_PRELOAD in its environment too
// (the environment passes it down by default).
//
// MINIRT_CPUID_MASK chooses what is hidden: `avx2` (the default: everything
// an AVX2-only CPU lacks, as above), `amx` (the AMX tiles alone: minirt's
// --math bf16 then runs on AVX512_BF16), or `bf16` (AMX and AVX512_BF16:
// --math bf16 then runs float32 and says why).
//
// Set MINIRT_CPUID_MASK_QUIET=1 to silence the one line it prints to stderr.
#include <asm/prctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cpuid.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct sigaction g_previous;

enum class Mode { kAvx2, kAmx, kBf16 };
Mode g_mode = Mode::kAvx2;

// What the lesser modes hide: AMX (leaf 7 EDX bits 22, 24, 25; XSAVE
// components 17, 18; the tile leaves), and for kBf16 AVX512_BF16 and
// AMX-FP16 too (leaf 7 subleaf 1 EAX bits 5, 21).
void mask_bf16(Mode m, uint32_t leaf, uint32_t subleaf, uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
  (void)b;
  (void)c;
  if (leaf == 7 && subleaf == 0) {
    d &= ~((1u << 22) | (1u << 24) | (1u << 25));
  } else if (leaf == 7 && subleaf == 1) {
    if (m == Mode::kBf16) a &= ~((1u << 5) | (1u << 21));
  } else if (leaf == 0xD && subleaf == 0) {
    a &= ~((1u << 17) | (1u << 18));
  } else if (leaf == 0x1D || leaf == 0x1E) {
    a = b = c = d = 0;
  }
}

long set_cpuid_enabled(int enabled) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled); }

// Clears what an AVX2-only CPU (e.g. AMD Zen 3) lacks; bit numbers from the
// Intel SDM's CPUID leaf 7 and leaf 0xD tables.
void mask(uint32_t leaf, uint32_t subleaf, uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
  if (leaf == 7 && subleaf == 0) {
    // EBX: AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31.
    b &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31));
    // ECX: VBMI 1, VBMI2 6, VNNI 11, BITALG 12, VPOPCNTDQ 14.
    c &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
    // EDX: 4VNNIW 2, 4FMAPS 3, VP2INTERSECT 8, AMX-BF16 22, AVX512-FP16 23, AMX-TILE 24, AMX-INT8 25.
    d &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
  } else if (leaf == 7 && subleaf == 1) {
    // EAX: AVX-VNNI 4, AVX512-BF16 5, AMX-FP16 21, AVX-IFMA 23.
    a &= ~((1u << 4) | (1u << 5) | (1u << 21) | (1u << 23));
    // EDX: AVX-VNNI-INT8 4, AVX-NE-CONVERT 5, AMX-COMPLEX 8, AVX10 19.
    d &= ~((1u << 4) | (1u << 5) | (1u << 8) | (1u << 19));
  } else if (leaf == 0xD && subleaf == 0) {
    // Supported XSAVE components: opmask 5, ZMM_Hi256 6, Hi16_ZMM 7, AMX TILECFG 17, TILEDATA 18.
    a &= ~((1u << 5) | (1u << 6) | (1u << 7) | (1u << 17) | (1u << 18));
  } else if (leaf == 0x1D || leaf == 0x1E || leaf == 0x24) {
    a = b = c = d = 0;  // AMX tile and TMUL information, AVX10 information
  }
}

void on_segv(int sig, siginfo_t* info, void* raw) {
  auto* uc = static_cast<ucontext_t*>(raw);
  greg_t* r = uc->uc_mcontext.gregs;
  const auto* ip = reinterpret_cast<const unsigned char*>(r[REG_RIP]);
  if (info->si_code == SI_KERNEL && ip[0] == 0x0F && ip[1] == 0xA2) {
    uint32_t leaf = static_cast<uint32_t>(r[REG_RAX]), subleaf = static_cast<uint32_t>(r[REG_RCX]);
    uint32_t a = 0, b = 0, c = 0, d = 0;
    set_cpuid_enabled(1);
    __cpuid_count(leaf, subleaf, a, b, c, d);
    set_cpuid_enabled(0);
    if (g_mode == Mode::kAvx2)
      mask(leaf, subleaf, a, b, c, d);
    else
      mask_bf16(g_mode, leaf, subleaf, a, b, c, d);
    r[REG_RAX] = a;
    r[REG_RBX] = b;
    r[REG_RCX] = c;
    r[REG_RDX] = d;
    r[REG_RIP] += 2;
    return;
  }
  // Not ours: hand it on as if this handler had never been installed.
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, raw);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    signal(sig, SIG_DFL);  // the default action: a fault, or a SIGSEGV another process sent, ends the process
    raise(sig);
  }
}

__attribute__((constructor(101))) void install() {
  const char* mode = std::getenv("MINIRT_CPUID_MASK");
  if (mode && std::strcmp(mode, "amx") == 0)
    g_mode = Mode::kAmx;
  else if (mode && std::strcmp(mode, "bf16") == 0)
    g_mode = Mode::kBf16;
  else if (mode && *mode && std::strcmp(mode, "avx2") != 0)
    std::fprintf(stderr, "cpuid-mask: MINIRT_CPUID_MASK=%s is not avx2, amx or bf16; masking as avx2\n", mode);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &g_previous) != 0) {
    std::perror("cpuid-mask: sigaction");
    return;
  }
  const char* quiet = std::getenv("MINIRT_CPUID_MASK_QUIET");
  if (set_cpuid_enabled(0) != 0) {
    std::fprintf(stderr, "cpuid-mask: this kernel or CPU cannot make CPUID fault (no cpuid_fault); nothing masked\n");
    sigaction(SIGSEGV, &g_previous, nullptr);
    return;
  }
  if (!(quiet && *quiet == '1'))
    std::fprintf(stderr, "cpuid-mask: %s hidden from CPUID\n",
                 g_mode == Mode::kAmx    ? "AMX"
                 : g_mode == Mode::kBf16 ? "AMX and AVX512_BF16"
                                         : "AVX-512, AMX and AVX-VNNI");
}

}  // namespace

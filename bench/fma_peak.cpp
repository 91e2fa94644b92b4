// minirt-fma-peak: measures this machine's fp32 FMA peak, the yardstick for
// "fraction of peak" in bench/side_by_side.py, and prints it as JSON.
//
//   build/bin/minirt-fma-peak                       # 1 thread and all cores, best ISA
//   build/bin/minirt-fma-peak --threads 1,2 --isa avx2 --seconds 0.5
//
//   {"isa": "avx512", "vector_bits": 512, "chains": 12, "seconds": 0.3,
//    "results": [{"threads": 1, "gflops": 187.4}, {"threads": 2, "gflops": 371.0}]}
//
// Each thread runs `kChains` independent chains of vector FMAs (a = a * b + c)
// on zmm (AVX-512F) or ymm (AVX2 + FMA) registers: enough chains to cover the
// FMA latency times the FMA ports of current x86 cores (4 cycles x 2 ports = 8),
// so the loop is bound by FMA throughput alone, which is the peak a GEMM can
// approach. The ISA is chosen at run time with __builtin_cpu_supports, and the
// loops are compiled with per-function target attributes, so one binary runs
// (and measures the right thing) on AVX2-only and AVX-512 machines alike.
// The N-thread figure is the sum over threads that all start together (a
// barrier) and run the same number of iterations, divided by the slowest
// one's wall time; each figure is the best of a few repetitions.
//
// Where the CPU has AMX-BF16 tiles (CPUID, XCR0's tile state, and Linux's
// permission, asked with arch_prctl(ARCH_REQ_XCOMP_PERM)), "amx_bf16" adds
// the tile unit's peak the same way: each thread a loop of tdpbf16ps on
// four accumulator tiles from two A and two B tiles loaded once (16 x 16 x
// 32 multiply-adds each), the yardstick of the bf16 convolutions
// (MathMode::kBf16). Without them: "amx_bf16": null and the reason.
// "avx512_bf16" is the same for vdpbf16ps on zmm registers, the yardstick of
// the bf16 convolutions where the CPU has AVX512_BF16 but no tiles (AMD Zen 4,
// or AMX masked).
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 12;
constexpr int kRepeats = 3;

volatile float g_sink;  // keeps the chains' results alive

// The twelve accumulators are named variables, not an array, so that the
// compiler keeps all of them in registers (an array indexed in a loop ends
// up in memory at -O2, and the loop then measures loads and stores).
#define MINIRT_FMA_CHAINS(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11)

// Keeps the chains' results alive: their lanes summed (through memory: GCC
// 12 warns inside _mm512_reduce_add_ps) into g_sink.
void sink(const float* lanes, int n) {
  float t = 0;
  for (int i = 0; i < n; ++i) t += lanes[i];
  g_sink = t;
}

// Runs `iters` rounds of kChains independent 16-lane FMAs. Returns the flops done.
__attribute__((target("avx512f"))) double fma_avx512(int64_t iters) {
#define MINIRT_INIT(j) __m512 a##j = _mm512_set1_ps(1.0f + 0.01f * (j));
  MINIRT_FMA_CHAINS(MINIRT_INIT)
#undef MINIRT_INIT
  // b slightly below 1 and a small c keep every value finite and normal forever.
  const __m512 b = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-4f);
  for (int64_t i = 0; i < iters; ++i) {
#define MINIRT_STEP(j) a##j = _mm512_fmadd_ps(a##j, b, c);
    MINIRT_FMA_CHAINS(MINIRT_STEP)
#undef MINIRT_STEP
  }
  __m512 s = _mm512_setzero_ps();
#define MINIRT_SUM(j) s = _mm512_add_ps(s, a##j);
  MINIRT_FMA_CHAINS(MINIRT_SUM)
#undef MINIRT_SUM
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  sink(lanes, 16);
  return static_cast<double>(iters) * kChains * 16 * 2;
}

// The same with 8-lane ymm FMAs.
__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iters) {
#define MINIRT_INIT(j) __m256 a##j = _mm256_set1_ps(1.0f + 0.01f * (j));
  MINIRT_FMA_CHAINS(MINIRT_INIT)
#undef MINIRT_INIT
  const __m256 b = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-4f);
  for (int64_t i = 0; i < iters; ++i) {
#define MINIRT_STEP(j) a##j = _mm256_fmadd_ps(a##j, b, c);
    MINIRT_FMA_CHAINS(MINIRT_STEP)
#undef MINIRT_STEP
  }
  __m256 s = _mm256_setzero_ps();
#define MINIRT_SUM(j) s = _mm256_add_ps(s, a##j);
  MINIRT_FMA_CHAINS(MINIRT_SUM)
#undef MINIRT_SUM
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  sink(lanes, 8);
  return static_cast<double>(iters) * kChains * 8 * 2;
}

// `iters` rounds of kChains independent vdpbf16ps (16 lanes, each the sum
// of two bf16 products added to an fp32 accumulator: 64 flops). The operands
// are bf16 zeros' neighbours, small enough that the sums never overflow.
__attribute__((target("avx512f,avx512bf16"))) double dpbf16_avx512(int64_t iters) {
#define MINIRT_INIT(j) __m512 a##j = _mm512_set1_ps(0.01f * (j));
  MINIRT_FMA_CHAINS(MINIRT_INIT)
#undef MINIRT_INIT
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  for (int64_t i = 0; i < iters; ++i) {
#define MINIRT_STEP(j) a##j = _mm512_dpbf16_ps(a##j, b, b);
    MINIRT_FMA_CHAINS(MINIRT_STEP)
#undef MINIRT_STEP
  }
  __m512 s = _mm512_setzero_ps();
#define MINIRT_SUM(j) s = _mm512_add_ps(s, a##j);
  MINIRT_FMA_CHAINS(MINIRT_SUM)
#undef MINIRT_SUM
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  sink(lanes, 16);
  return static_cast<double>(iters) * kChains * 16 * 4;
}

// Palette 1, every tile 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// `iters` rounds of four tdpbf16ps on tiles loaded once. Returns the flops done.
__attribute__((target("amx-tile,amx-bf16"))) double amx_bf16(int64_t iters) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  alignas(64) static const uint16_t zeros[1024] = {};  // the sums stay finite
  alignas(64) float c[256];
  _tile_loadconfig(&cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, zeros, 64);
  _tile_loadd(5, zeros + 512, 64);
  _tile_loadd(6, zeros, 64);
  _tile_loadd(7, zeros + 512, 64);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, 64);
  _tile_release();
  g_sink = c[0];
  return static_cast<double>(iters) * 4 * 16 * 16 * 32 * 2;
}

// Whether AMX-BF16 tiles can run here; `why` says why not.
bool amx_usable(std::string* why) {
  unsigned a, b, c, d;
  if (__get_cpuid_max(0, nullptr) < 7) {
    *why = "no CPUID leaf 7";
    return false;
  }
  __cpuid_count(7, 0, a, b, c, d);
  if (!(d & (1u << 24)) || !(d & (1u << 22))) {
    *why = "this CPU has no AMX-BF16 tiles";
    return false;
  }
  __get_cpuid(1, &a, &b, &c, &d);
  uint32_t lo = 0, hi = 0;
  if (c & (1u << 27)) __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) {
    *why = "the OS does not enable the tile state (XCR0)";
    return false;
  }
  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) != 0) {
    *why = "Linux refused the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM)";
    return false;
  }
  return true;
}

using Loop = double (*)(int64_t);

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The iteration count that makes `loop` run about `seconds` on one thread.
int64_t calibrate(Loop loop, int64_t iters, double seconds) {
  for (;;) {
    const double t0 = now_s();
    loop(iters);
    const double dt = now_s() - t0;
    if (dt > 0.05 || iters > (int64_t{1} << 40))
      return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iters) * seconds / dt));
    iters *= 4;
  }
}

// GFLOP/s of `threads` threads each running `iters` iterations at once.
double measure(Loop loop, int threads, int64_t iters) {
  double best = 0;
  for (int r = 0; r < kRepeats; ++r) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> flops(static_cast<size_t>(threads), 0.0);
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        flops[static_cast<size_t>(t)] = loop(iters);
      });
    while (ready.load() < threads - 1) {
    }
    const double t0 = now_s();
    go.store(true, std::memory_order_release);
    flops[0] = loop(iters);
    for (auto& th : pool) th.join();
    const double dt = now_s() - t0;
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / dt / 1e9);
  }
  return best;
}

std::vector<int> parse_threads(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 4096) return {};
    out.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: minirt-fma-peak [--threads N[,N...]] [--isa auto|avx512|avx2] [--seconds S]\n"
               "Measures the fp32 FMA peak (GFLOP/s) with independent FMA chains and prints JSON.\n"
               "  --threads   thread counts to measure (default: 1 and all logical cores)\n"
               "  --isa       vector ISA (default auto: avx512 where the CPU has AVX-512F, else avx2)\n"
               "  --seconds   about how long one measurement runs (default 0.3)\n"
               "exit status: 0 success, 1 the CPU lacks the ISA, 2 bad usage\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string isa = "auto";
  double seconds = 0.3;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> threads = {1};
  if (cores > 1) threads.push_back(cores);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if ((a == "--threads" || a == "--isa" || a == "--seconds") && i + 1 >= argc) {
      std::fprintf(stderr, "minirt-fma-peak: %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--threads") {
      threads = parse_threads(argv[++i]);
      if (threads.empty()) {
        std::fprintf(stderr, "minirt-fma-peak: --threads wants positive integers separated by commas\n");
        return 2;
      }
    } else if (a == "--isa") {
      isa = argv[++i];
      if (isa != "auto" && isa != "avx512" && isa != "avx2") {
        std::fprintf(stderr, "minirt-fma-peak: --isa wants auto, avx512 or avx2, got '%s'\n", isa.c_str());
        return 2;
      }
    } else if (a == "--seconds") {
      char* end = nullptr;
      seconds = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(seconds > 0 && seconds <= 60)) {
        std::fprintf(stderr, "minirt-fma-peak: --seconds wants a number in (0, 60]\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "minirt-fma-peak: unknown argument %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }

  __builtin_cpu_init();
  const bool has512 = __builtin_cpu_supports("avx512f");
  const bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == "auto") isa = has512 ? "avx512" : "avx2";
  if ((isa == "avx512" && !has512) || (isa == "avx2" && !has2)) {
    std::fprintf(stderr, "minirt-fma-peak: this CPU does not have %s\n", isa == "avx512" ? "AVX-512F" : "AVX2 and FMA");
    return 1;
  }
  const Loop loop = isa == "avx512" ? fma_avx512 : fma_avx2;

  const int64_t iters = calibrate(loop, 1 << 16, seconds);

  std::printf("{\"isa\": \"%s\", \"vector_bits\": %d, \"chains\": %d, \"seconds\": %g, \"results\": [", isa.c_str(),
              isa == "avx512" ? 512 : 256, kChains, seconds);
  for (size_t k = 0; k < threads.size(); ++k)
    std::printf("%s{\"threads\": %d, \"gflops\": %.2f}", k ? ", " : "", threads[k], measure(loop, threads[k], iters));
  std::printf("]");
  // The bf16 yardsticks: vdpbf16ps where the CPU has AVX512_BF16, the tile
  // unit where it has AMX-BF16; null and the reason where not.
  auto peaks = [&](const char* name, Loop bf16_loop, int64_t start) {
    const int64_t n = calibrate(bf16_loop, start, seconds);
    std::printf(", \"%s\": [", name);
    for (size_t k = 0; k < threads.size(); ++k)
      std::printf("%s{\"threads\": %d, \"gflops\": %.2f}", k ? ", " : "", threads[k],
                  measure(bf16_loop, threads[k], n));
    std::printf("]");
  };
  if (__builtin_cpu_supports("avx512bf16"))
    peaks("avx512_bf16", dpbf16_avx512, 1 << 16);
  else
    std::printf(", \"avx512_bf16\": null, \"avx512_bf16_why\": \"this CPU has no AVX512_BF16\"");
  std::string why;
  if (amx_usable(&why))
    peaks("amx_bf16", amx_bf16, 1 << 12);
  else
    std::printf(", \"amx_bf16\": null, \"amx_bf16_why\": \"%s\"", why.c_str());
  std::printf("}\n");
  return 0;
}

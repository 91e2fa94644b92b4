// float16 and bfloat16 conversions by bit manipulation (no hardware or
// compiler half type needed): see minirt/half.h for the rounding rules.
#include <minirt/error.h>
#include <minirt/half.h>

#include <cstring>

namespace minirt {

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13));  // infinity, NaN (payload kept)
  if (exp == 0) {
    if (mant == 0) return float_of(sign);  // signed zero
    // Subnormal: m * 2^-24, normalized for float32 (which has room for it).
    exp = 1;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --exp;
    }
    mant &= 0x3ffu;
  }
  // Rebias the exponent from 15 to 127.
  return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t float_to_half(float f) {
  const uint32_t x = bits_of(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {
    if (ax == 0x7f800000u) return sign | 0x7c00u;  // infinity
    // NaN: the top 10 payload bits, and a NaN still when those are zero.
    uint16_t payload = static_cast<uint16_t>((ax >> 13) & 0x3ffu);
    return static_cast<uint16_t>(sign | 0x7c00u | (payload ? payload : 0x200u));
  }
  // 65520 (halfway between 65504, the largest half, and 65536) and up round
  // to infinity: the tie goes to the even neighbour, which is 2^16.
  if (ax >= 0x477ff000u) return sign | 0x7c00u;
  if (ax >= 0x38800000u) {
    // Normal half (2^-14 and up): drop 13 mantissa bits, rounding to nearest
    // even; a carry into the exponent is the right result.
    const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  // Subnormal half (multiples of 2^-24). 2^-25 and below round to zero (2^-25
  // itself ties to the even zero).
  if (ax <= 0x33000000u) return sign;
  const uint32_t e = ax >> 23;                         // 102 .. 112
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;  // with the implicit bit
  const uint32_t shift = 126u - e;                     // 14 .. 24
  uint32_t m = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (m & 1u))) ++m;  // 0x400 is the smallest normal: still right
  return static_cast<uint16_t>(sign | m);
}

float bfloat16_to_float(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bfloat16(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN, made quiet
  // Round to nearest even on the 16 dropped bits; overflow carries into infinity.
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

void half_to_float(const uint16_t* h, float* f, size_t n) {
  for (size_t i = 0; i < n; ++i) f[i] = half_to_float(h[i]);
}
void float_to_half(const float* f, uint16_t* h, size_t n) {
  for (size_t i = 0; i < n; ++i) h[i] = float_to_half(f[i]);
}
void bfloat16_to_float(const uint16_t* b, float* f, size_t n) {
  for (size_t i = 0; i < n; ++i) f[i] = bfloat16_to_float(b[i]);
}
void float_to_bfloat16(const float* f, uint16_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i) b[i] = float_to_bfloat16(f[i]);
}
void round_to_half(float* f, size_t n) {
  for (size_t i = 0; i < n; ++i) f[i] = half_to_float(float_to_half(f[i]));
}
void round_to_bfloat16(float* f, size_t n) {
  for (size_t i = 0; i < n; ++i) f[i] = bfloat16_to_float(float_to_bfloat16(f[i]));
}

bool is_half_dtype(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

Tensor to_float32(const Tensor& t) {
  if (!is_half_dtype(t.dtype())) return t;
  Tensor out = Tensor::zeros(DType::kFloat32, t.shape());
  const auto* src = static_cast<const uint16_t*>(t.raw());
  const size_t n = static_cast<size_t>(t.numel());
  if (t.dtype() == DType::kFloat16)
    half_to_float(src, out.data<float>(), n);
  else
    bfloat16_to_float(src, out.data<float>(), n);
  return out;
}

Tensor from_float32(const Tensor& t, DType half) {
  if (t.dtype() != DType::kFloat32 || !is_half_dtype(half))
    throw Error(ErrorCode::kInvalidArgument,
                std::string("from_float32: converts float32 to float16 or bfloat16, not ") + dtype_name(t.dtype()) +
                    " to " + dtype_name(half));
  Tensor out = Tensor::zeros(half, t.shape());
  const size_t n = static_cast<size_t>(t.numel());
  if (half == DType::kFloat16)
    float_to_half(t.data<float>(), out.data<uint16_t>(), n);
  else
    float_to_bfloat16(t.data<float>(), out.data<uint16_t>(), n);
  return out;
}

}  // namespace minirt

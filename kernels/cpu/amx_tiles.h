// The AMX tile configuration of minirt's tiled kernels (conv_bf16_amx.cpp,
// conv_int8_amx.cpp): palette 1, tiles 0-7 of 16 rows x 64 bytes. Included
// only by AMX ISA files (compiled with -mamx-tile), after <immintrin.h>;
// everything here is local to the including object.
#pragma once

#include <cstdint>

namespace minirt::cpu {
namespace {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Loads the configuration; the caller releases the tiles (_tile_release) when done.
inline void amx_configure_16x64() {
  AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

}  // namespace
}  // namespace minirt::cpu

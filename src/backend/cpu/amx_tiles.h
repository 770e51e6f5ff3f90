// The AMX tile configuration (LDTILECFG's 64-byte operand, palette 1), shared by the AMX
// kernels. Configurations are constants in read-only memory: the compiler does not see that
// LDTILECFG reads its operand, and was seen to drop the stores of a stack-built one.
#pragma once
#include <cstdint>

namespace minfer::cpu {

struct alignas(64) AmxTileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];  // bytes per row of each tile
  uint8_t rows[16];
};
static_assert(sizeof(AmxTileConfig) == 64);

}  // namespace minfer::cpu

// mok/payload.cpp — see payload.h.
#include "mok/payload.h"

#include <cstring>

#include "kernels/cpu/ops.h"
#include "mok/mxfp8.h"

namespace squeeze::mok {

void encode_rows(const MoeConfig& cfg, const float* src, std::byte* dst, int64_t rows) {
  const int64_t H = cfg.H(), n = rows * H;
  if (n == 0) return;
  switch (cfg.shape().payload) {
    case Payload::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case Payload::BF16: kernels::cpu::ops().f32_to_bf16(src, reinterpret_cast<uint16_t*>(dst), n); return;
    case Payload::MXFP8:
      for (int64_t r = 0; r < rows; ++r) {
        auto* row = reinterpret_cast<uint8_t*>(dst + size_t(r) * cfg.row_bytes());
        mxfp8().encode(src + r * H, H, row, row + H);
      }
      return;
  }
}

void decode_rows(const MoeConfig& cfg, const std::byte* src, float* dst, int64_t rows) {
  const int64_t H = cfg.H(), n = rows * H;
  if (n == 0) return;
  switch (cfg.shape().payload) {
    case Payload::F32: std::memcpy(dst, src, size_t(n) * 4); return;
    case Payload::BF16: kernels::cpu::ops().bf16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n); return;
    case Payload::MXFP8:
      for (int64_t r = 0; r < rows; ++r) {
        const auto* row = reinterpret_cast<const uint8_t*>(src + size_t(r) * cfg.row_bytes());
        mxfp8().decode(row, row + H, H, dst + r * H);
      }
      return;
  }
}

}  // namespace squeeze::mok

// mok/payload.h — rows of H floats to and from the wire format of a config's payload
// (bf16, f32, or MXFP8: per row H E4M3 bytes, then H / 32 E8M0 scales), the one place
// dispatch, combine and the MPI_Alltoallv baseline convert.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mok/config.h"

namespace squeeze::mok {

void encode_rows(const MoeConfig& cfg, const float* src, std::byte* dst, int64_t rows);
void decode_rows(const MoeConfig& cfg, const std::byte* src, float* dst, int64_t rows);

}  // namespace squeeze::mok

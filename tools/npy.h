// tools/npy.h — writes float32 arrays as NumPy .npy files (format 1.0), for dumps that
// Python reference checks load with numpy.load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace squeeze::cli {

// Writes data[rows, cols] to path; throws squeeze::Error on I/O failure.
void write_npy(const std::string& path, const float* data, int64_t rows, int64_t cols);

}  // namespace squeeze::cli

// core/cpu_features.h — what the CPU can run, detected once (CPUID + OS support via XGETBV).
#pragma once

#include <string>

namespace squeeze {

struct CpuFeatures {
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool bmi2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  int logical_cores = 1;

  bool has_avx2_fma() const { return avx2 && fma && f16c; }
  bool has_avx512() const { return avx512f && avx512bw && avx512vl && avx512dq; }
  // What squeeze's AVX-512 kernels need: F/BW/VL/DQ and VNNI, next to the AVX2 set whose
  // element-wise kernels the AVX-512 table keeps.
  bool has_avx512_vnni() const { return has_avx2_fma() && has_avx512() && avx512_vnni; }
  std::string describe() const;  // "avx2 fma f16c bmi2, 2 cores"
};

// Detected on first call; cheap afterwards.
const CpuFeatures& cpu_features();

}  // namespace squeeze

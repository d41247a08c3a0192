// core/cpu_features.cpp
#include "core/cpu_features.h"

#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace squeeze {

namespace {

#if defined(__x86_64__) || defined(__i386__)
unsigned long long read_xcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
  f.logical_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.sse42 = c & bit_SSE4_2;
  const bool osxsave = c & bit_OSXSAVE;
  const bool avx_cpu = c & bit_AVX;
  f.fma = c & bit_FMA;
  f.f16c = c & bit_F16C;
  const unsigned long long xcr0 = osxsave ? read_xcr0() : 0;
  const bool os_ymm = (xcr0 & 0x6) == 0x6;
  const bool os_zmm = (xcr0 & 0xe6) == 0xe6;
  f.avx = avx_cpu && os_ymm;
  f.fma = f.fma && f.avx;
  f.f16c = f.f16c && f.avx;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = f.avx && (b & bit_AVX2);
    f.bmi2 = b & bit_BMI2;
    f.avx512f = os_zmm && (b & bit_AVX512F);
    f.avx512bw = f.avx512f && (b & bit_AVX512BW);
    f.avx512vl = f.avx512f && (b & bit_AVX512VL);
    f.avx512dq = f.avx512f && (b & bit_AVX512DQ);
    f.avx512_vnni = f.avx512f && (c & bit_AVX512VNNI);
  }
  if (f.avx512f && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = a & (1u << 5);
#endif
  return f;
}

}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(sse42, "sse4.2");
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(bmi2, "bmi2");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512_vnni, "avx512vnni");
  add(avx512_bf16, "avx512bf16");
  return (s.empty() ? std::string("baseline") : s) + ", " + std::to_string(logical_cores) + " logical cores";
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace squeeze

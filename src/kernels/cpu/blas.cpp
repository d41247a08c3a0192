// kernels/cpu/blas.cpp — see blas.h.
#include "kernels/cpu/blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "core/cpu_features.h"
#include "core/error.h"

#ifndef SQUEEZE_OPENBLAS_PATH
#define SQUEEZE_OPENBLAS_PATH "libopenblas.so.0"
#endif

namespace squeeze::kernels::cpu {
namespace {

// CBLAS enum values (cblas.h): row-major 101, no-transpose 111, transpose 112.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
template <typename T>
using GemmFn = void (*)(int, int, int, int, int, int, T, const T*, int, const T*, int, T, T*, int);

struct Blas {
  GemmFn<float> sgemm = nullptr;
  GemmFn<double> dgemm = nullptr;
  std::string name;
};

// OpenBLAS reads OPENBLAS_CORETYPE and OPENBLAS_NUM_THREADS when it is loaded. setenv is
// not thread-safe (a concurrent getenv on another thread may read a torn environment), and
// the first BLAS call often comes from a pool worker, so the variables are set here, by a
// static initializer: before main, on the main thread, before any pool exists. Values the
// user set win (overwrite = 0). One OpenBLAS thread: squeeze spreads calls over its pool,
// and OPENBLAS_NUM_THREADS=1 keeps OpenBLAS from starting a thread per core at load.
void prepare_environment() {
  const CpuFeatures& f = cpu_features();
  if (f.has_avx512()) ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  else if (f.has_avx2_fma()) ::setenv("OPENBLAS_CORETYPE", "Haswell", 0);
  ::setenv("OPENBLAS_NUM_THREADS", "1", 0);
}
const bool environment_prepared = (prepare_environment(), true);

const Blas& blas() {
  static const Blas loaded = [] {
    // Only reads the environment (prepared before main); dlopen itself is thread-safe.
    void* h = ::dlopen(SQUEEZE_OPENBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) h = ::dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) fail("cannot load OpenBLAS (", SQUEEZE_OPENBLAS_PATH, "): ", ::dlerror());
    Blas b;
    b.sgemm = reinterpret_cast<GemmFn<float>>(::dlsym(h, "cblas_sgemm"));
    b.dgemm = reinterpret_cast<GemmFn<double>>(::dlsym(h, "cblas_dgemm"));
    auto set_threads = reinterpret_cast<void (*)(int)>(::dlsym(h, "openblas_set_num_threads"));
    auto config = reinterpret_cast<char* (*)()>(::dlsym(h, "openblas_get_config"));
    auto core = reinterpret_cast<char* (*)()>(::dlsym(h, "openblas_get_corename"));
    if (b.sgemm == nullptr || b.dgemm == nullptr) fail("OpenBLAS at ", SQUEEZE_OPENBLAS_PATH, " lacks cblas_sgemm/dgemm");
    if (set_threads) set_threads(1);
    b.name = std::string(config ? config() : "OpenBLAS") + (core ? std::string(" (core ") + core() + ")" : "");
    return b;
  }();
  return loaded;
}

template <typename T>
void call(GemmFn<T> fn, const GemmArgs<T>& a) {
  if (a.M <= 0 || a.N <= 0) return;
  fn(kRowMajor, a.trans_a ? kTrans : kNoTrans, a.trans_b ? kTrans : kNoTrans, static_cast<int>(a.M),
     static_cast<int>(a.N), static_cast<int>(a.K), a.alpha, a.A, static_cast<int>(a.lda), a.B, static_cast<int>(a.ldb),
     a.beta, a.C, static_cast<int>(a.ldc));
}

}  // namespace

void blas_gemm(const GemmArgs<float>& a) { call(blas().sgemm, a); }
void blas_gemm(const GemmArgs<double>& a) { call(blas().dgemm, a); }

const char* blas_name() { return blas().name.c_str(); }

}  // namespace squeeze::kernels::cpu

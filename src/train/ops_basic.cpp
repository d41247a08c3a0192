// train/ops_basic.cpp — embedding, matmul, add, scale, SwiGLU and RoPE with their
// backward steps. Row-parallel work goes to the tape's pool; GEMMs to the BLAS.
#include <cmath>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/rope_tables.h"
#include "kernels/cpu/blas.h"
#include "train/ops.h"
#include "train/ops_rows.h"

namespace squeeze::train {

using kernels::cpu::blas_gemm;
using kernels::cpu::GemmArgs;

using detail::check_same;
using detail::for_rows;

template <typename T>
Var embedding(Tape<T>& t, Var table, std::span<const int32_t> ids) {
  const int64_t n = static_cast<int64_t>(ids.size()), E = t.cols(table), V = t.rows(table);
  for (int32_t id : ids) SQZ_CHECK(id >= 0 && id < V, "embedding: token id ", id, " outside [0, ", V, ")");
  Var y = t.output(n, E, t.needs_grad(table));
  const T* w = t.value(table);
  T* out = t.value(y);
  for (int64_t i = 0; i < n; ++i) std::copy_n(w + ids[static_cast<size_t>(i)] * E, E, out + i * E);
  if (t.needs_grad(table)) {
    std::vector<int32_t> idv(ids.begin(), ids.end());
    t.on_backward([&t, table, y, idv = std::move(idv), E] {
      T* gw = t.grad(table);
      const T* gy = t.grad(y);
      for (size_t i = 0; i < idv.size(); ++i) {
        T* row = gw + idv[i] * E;
        for (int64_t j = 0; j < E; ++j) row[j] += gy[static_cast<int64_t>(i) * E + j];
      }
    });
  }
  return y;
}

template <typename T>
Var matmul_nt(Tape<T>& t, Var x, Var w) {
  const int64_t n = t.rows(x), K = t.cols(x), N = t.rows(w);
  SQZ_CHECK(t.cols(w) == K, "matmul: x has ", K, " columns, w rows have ", t.cols(w));
  Var y = t.output(n, N, t.needs_grad(x) || t.needs_grad(w));
  if constexpr (std::is_same_v<T, float>) {
    kernels::cpu::gemm_nt(t.pool(), t.value(x), K, t.value(w), K, t.value(y), N, n, N, K);
  } else {
    blas_gemm(GemmArgs<T>{.trans_b = true, .M = n, .N = N, .K = K, .A = t.value(x), .lda = K, .B = t.value(w), .ldb = K,
                          .C = t.value(y), .ldc = N});
  }
  if (t.needs_grad(y)) {
    t.on_backward([&t, x, w, y, n, N, K] {
      if (T* gx = t.grad(x))  // dX[n, K] += dY[n, N] · W[N, K]
        blas_gemm(GemmArgs<T>{.M = n, .N = K, .K = N, .A = t.grad(y), .lda = N, .B = t.value(w), .ldb = K, .beta = 1,
                              .C = gx, .ldc = K});
      if (T* gw = t.grad(w))  // dW[N, K] += dY[n, N]ᵀ · X[n, K]
        blas_gemm(GemmArgs<T>{.trans_a = true, .M = N, .N = K, .K = n, .A = t.grad(y), .lda = N, .B = t.value(x),
                              .ldb = K, .beta = 1, .C = gw, .ldc = K});
    });
  }
  return y;
}

template <typename T>
Var add(Tape<T>& t, Var a, Var b) {
  check_same(t, a, b, "add");
  const int64_t m = t.size(a);
  Var y = t.output(t.rows(a), t.cols(a), t.needs_grad(a) || t.needs_grad(b));
  const T *pa = t.value(a), *pb = t.value(b);
  T* py = t.value(y);
  for (int64_t i = 0; i < m; ++i) py[i] = pa[i] + pb[i];
  if (t.needs_grad(y)) {
    t.on_backward([&t, a, b, y, m] {
      const T* gy = t.grad(y);
      for (Var in : {a, b})
        if (T* g = t.grad(in))
          for (int64_t i = 0; i < m; ++i) g[i] += gy[i];
    });
  }
  return y;
}

template <typename T>
Var scale(Tape<T>& t, Var x, double s) {
  const int64_t m = t.size(x);
  const T k = static_cast<T>(s);
  Var y = t.output(t.rows(x), t.cols(x), t.needs_grad(x));
  const T* px = t.value(x);
  T* py = t.value(y);
  for (int64_t i = 0; i < m; ++i) py[i] = k * px[i];
  if (t.needs_grad(y)) {
    t.on_backward([&t, x, y, m, k] {
      const T* gy = t.grad(y);
      T* g = t.grad(x);
      for (int64_t i = 0; i < m; ++i) g[i] += k * gy[i];
    });
  }
  return y;
}

template <typename T>
Var swiglu(Tape<T>& t, Var gate, Var up) {
  check_same(t, gate, up, "swiglu");
  const int64_t m = t.size(gate);
  Var y = t.output(t.rows(gate), t.cols(gate), t.needs_grad(gate) || t.needs_grad(up));
  const T *g = t.value(gate), *u = t.value(up);
  T* py = t.value(y);
  for (int64_t i = 0; i < m; ++i) py[i] = g[i] / (T(1) + std::exp(-g[i])) * u[i];
  if (t.needs_grad(y)) {
    t.on_backward([&t, gate, up, y, m] {
      const T *g = t.value(gate), *u = t.value(up), *gy = t.grad(y);
      T *gg = t.grad(gate), *gu = t.grad(up);
      for (int64_t i = 0; i < m; ++i) {
        const T s = T(1) / (T(1) + std::exp(-g[i]));
        if (gu) gu[i] += gy[i] * g[i] * s;
        if (gg) gg[i] += gy[i] * u[i] * s * (T(1) + g[i] * (T(1) - s));  // silu'(g) = s(1 + g(1 − s))
      }
    });
  }
  return y;
}

template <typename T>
Var rope(Tape<T>& t, Var x, const RopeSpec& s) {
  const int64_t n = t.rows(x), D = s.head_dim, P = D / 2;
  SQZ_CHECK(D > 0 && D % 2 == 0 && s.n_heads > 0 && t.cols(x) == s.n_heads * D, "rope: rows of ", t.cols(x),
            " values are not ", s.n_heads, " heads of an even head_dim ", D);
  SQZ_CHECK(s.positions ? static_cast<int64_t>(s.positions->size()) == n : s.seq_len > 0 && n % s.seq_len == 0,
            "rope: ", n, " rows do not match the positions given");
  // cos/sin per (table row, pair), as the inference kernel computes them; one table row
  // per position of a sequence, or per row when positions are given
  const int64_t L = s.positions ? n : s.seq_len;
  auto cs = std::make_shared<std::vector<T>>(static_cast<size_t>(L * P * 2));
  for (int64_t r = 0; r < L; ++r) {
    const int64_t pos = s.positions ? (*s.positions)[static_cast<size_t>(r)] : r;
    for (int64_t i = 0; i < P; ++i) {
      T c, sn;
      if constexpr (std::is_same_v<T, float>) {
        kernels::cpu::rope_angle({.position = pos, .freq_base = s.freq_base}, i, D, &c, &sn);
      } else {
        const double theta = static_cast<double>(pos) * std::pow(static_cast<double>(s.freq_base), -2.0 * i / D);
        c = std::cos(theta), sn = std::sin(theta);
      }
      (*cs)[static_cast<size_t>((r * P + i) * 2)] = c;
      (*cs)[static_cast<size_t>((r * P + i) * 2 + 1)] = sn;
    }
  }
  // Rotates rows by +θ (forward) or −θ (backward: the transpose of a rotation).
  auto rotate = [H = s.n_heads, D, P, L, cs, neox = s.neox](const T* in, T* out, int64_t row, T sign, bool accumulate) {
    const T* tab = cs->data() + (row % L) * P * 2;
    const int64_t stride = neox ? P : 1, step = neox ? 1 : 2;  // pair i: (i·step, i·step + stride)
    for (int64_t h = 0; h < H; ++h) {
      const T* a = in + row * H * D + h * D;
      T* b = out + row * H * D + h * D;
      for (int64_t i = 0; i < P; ++i) {
        const int64_t i0 = i * step, i1 = i0 + stride;
        const T c = tab[2 * i], sn = sign * tab[2 * i + 1];
        const T x0 = a[i0], x1 = a[i1];
        const T y0 = x0 * c - x1 * sn, y1 = x0 * sn + x1 * c;
        if (accumulate) {
          b[i0] += y0, b[i1] += y1;
        } else {
          b[i0] = y0, b[i1] = y1;
        }
      }
    }
  };
  Var y = t.output(n, t.cols(x), t.needs_grad(x));
  const T* px = t.value(x);
  T* py = t.value(y);
  for_rows(t.pool(), n, t.cols(x), [&](int64_t r) { rotate(px, py, r, T(1), false); });
  if (t.needs_grad(y)) {
    t.on_backward([&t, x, y, n, rotate] {
      const T* gy = t.grad(y);
      T* gx = t.grad(x);
      for_rows(t.pool(), n, t.cols(x), [&](int64_t r) { rotate(gy, gx, r, T(-1), true); });
    });
  }
  return y;
}

#define SQZ_TRAIN_INSTANTIATE(T)                                                 \
  template Var embedding<T>(Tape<T>&, Var, std::span<const int32_t>);            \
  template Var matmul_nt<T>(Tape<T>&, Var, Var);                                 \
  template Var add<T>(Tape<T>&, Var, Var);                                       \
  template Var scale<T>(Tape<T>&, Var, double);                                  \
  template Var swiglu<T>(Tape<T>&, Var, Var);                                    \
  template Var rope<T>(Tape<T>&, Var, const RopeSpec&);
SQZ_TRAIN_INSTANTIATE(float)
SQZ_TRAIN_INSTANTIATE(double)
#undef SQZ_TRAIN_INSTANTIATE

}  // namespace squeeze::train

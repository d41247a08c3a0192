// mok/reference.cpp — float64 forward/backward of the MoE layer, one token at a time.
#include "mok/reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/dtype.h"
#include "core/error.h"
#include "mok/mxfp8.h"

namespace squeeze::mok {
namespace {

double sigmoid(double a) { return 1.0 / (1.0 + std::exp(-a)); }

// The wire rounding: the distributed layer holds f32 and sends bf16 (per value) or MXFP8
// (per row: blocks of 32 share a scale), or nothing (f32, or emulation off).
struct Rounder {
  Payload payload;
  bool on;

  // One MXFP8 element of x at the block scale 2^s.
  static double mx(double x, int s) {
    return double(e4m3_to_f32(f32_to_e4m3(float(x) * std::ldexp(1.0f, -s), true))) * std::ldexp(1.0, s);
  }
  static int mx_scale(double amax) { return amax > 0 ? mxfp8_scale_exponent(float(amax)) : -127; }

  void round_row(std::vector<double>& v) const {
    if (!on) return;
    if (payload == Payload::BF16) {
      for (double& x : v) x = double(bf16_to_f32(f32_to_bf16(float(x))));
      return;
    }
    std::vector<float> f(v.begin(), v.end()), y(v.size());
    std::vector<uint8_t> e(v.size()), sc(v.size() / size_t(kMxBlock));
    mxfp8_reference().encode(f.data(), int64_t(f.size()), e.data(), sc.data());
    mxfp8_reference().decode(e.data(), sc.data(), int64_t(f.size()), y.data());
    for (size_t i = 0; i < v.size(); ++i) v[i] = y[i];
  }

  // The most a rounding flip can change each rounded value when the layer's value may be
  // anywhere in v ± err: 0 unless that interval holds a rounding midpoint (bf16: one ulp;
  // MXFP8: the element's rounding at v ± err under every scale the block's amax allows).
  std::vector<double> flips(const std::vector<double>& v, const std::vector<double>& err) const {
    std::vector<double> out(v.size(), 0.0);
    if (!on) return out;
    if (payload == Payload::BF16) {
      const auto r = [](double x) { return double(bf16_to_f32(f32_to_bf16(float(x)))); };
      for (size_t i = 0; i < v.size(); ++i)
        if (r(v[i] - err[i]) != r(v[i] + err[i]))
          out[i] = std::ldexp(1.0, std::ilogb(std::max(std::fabs(v[i]) + err[i], 1e-30)) - 7);
      return out;
    }
    for (size_t b = 0; b < v.size(); b += size_t(kMxBlock)) {
      double lo = 0, hi = 0, amax = 0;
      for (size_t i = b; i < b + size_t(kMxBlock); ++i) {
        lo = std::max(lo, std::fabs(v[i]) - err[i]);
        hi = std::max(hi, std::fabs(v[i]) + err[i]);
        amax = std::max(amax, double(std::fabs(float(v[i]))));
      }
      const int s0 = mx_scale(amax), s_lo = mx_scale(float(lo)), s_hi = mx_scale(float(hi));
      for (size_t i = b; i < b + size_t(kMxBlock); ++i) {
        const double at = mx(v[i], s0);
        for (int s : {s_lo, s_hi})
          out[i] = std::max({out[i], std::fabs(mx(v[i] - err[i], s) - at), std::fabs(mx(v[i] + err[i], s) - at)});
      }
    }
    return out;
  }
};

// The layer's f32 error on a value computed from `terms` products of magnitude sum
// `abs_sum` after a chain of n accumulations: n * 2^-24 * abs_sum (the classic
// gamma_n bound), doubled for the f32 exp/silu ulps along the way.
double f32_err(int64_t n, double abs_sum) { return 2.0 * double(n) * std::ldexp(1.0, -24) * abs_sum; }

struct Route {
  std::vector<double> s;   // activated scores [E]
  std::vector<int32_t> sel;
  std::vector<double> g;
  double S = 0;
};

Route route_token(const MoeConfig& cfg, const RefWeights& w, const double* x) {
  const int E = cfg.E(), K = cfg.K();
  const int64_t H = cfg.H();
  Route r;
  r.s.resize(size_t(E));
  for (int e = 0; e < E; ++e) {
    double acc = w.router_bias[size_t(e)];
    for (int64_t h = 0; h < H; ++h) acc += w.router[size_t(e * H + h)] * x[h];
    r.s[size_t(e)] = acc;
  }
  if (cfg.shape().scoring == Scoring::Softmax) {
    const double m = *std::max_element(r.s.begin(), r.s.end());
    double sum = 0;
    for (double& v : r.s) sum += (v = std::exp(v - m));
    for (double& v : r.s) v /= sum;
  } else {
    for (double& v : r.s) v = sigmoid(v);
  }
  std::vector<int32_t> order(static_cast<size_t>(E));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return r.s[size_t(a)] > r.s[size_t(b)]; });
  r.sel.assign(order.begin(), order.begin() + K);
  for (int32_t e : r.sel) r.S += r.s[size_t(e)];
  for (int32_t e : r.sel) r.g.push_back(r.s[size_t(e)] / r.S);
  return r;
}

// One SwiGLU expert on one row, keeping what its backward needs.
struct FfnTrace {
  std::vector<double> a, b, h, y;
  std::vector<double> y_abs;  // sum of |down * h| per output: the f32 error scale
};
FfnTrace ffn(const BasicExpertWeights<double>& w, int64_t H, int64_t I, const std::vector<double>& x) {
  FfnTrace f{std::vector<double>(size_t(I)), std::vector<double>(size_t(I)), std::vector<double>(size_t(I)),
             std::vector<double>(size_t(H)), {}};
  for (int64_t i = 0; i < I; ++i) {
    double a = 0, b = 0;
    for (int64_t h = 0; h < H; ++h) a += w.gate[size_t(i * H + h)] * x[size_t(h)], b += w.up[size_t(i * H + h)] * x[size_t(h)];
    f.a[size_t(i)] = a, f.b[size_t(i)] = b, f.h[size_t(i)] = a * sigmoid(a) * b;
  }
  f.y_abs.resize(size_t(H));
  for (int64_t h = 0; h < H; ++h) {
    double y = 0, ya = 0;
    for (int64_t i = 0; i < I; ++i) {
      y += w.down[size_t(h * I + i)] * f.h[size_t(i)];
      ya += std::fabs(w.down[size_t(h * I + i)] * f.h[size_t(i)]);
    }
    f.y[size_t(h)] = y;
    f.y_abs[size_t(h)] = ya;
  }
  return f;
}

// dy -> accumulates weight grads into gw, returns dx of this row.
std::vector<double> ffn_backward(const BasicExpertWeights<double>& w, BasicExpertWeights<double>& gw, int64_t H,
                                 int64_t I, const std::vector<double>& x, const FfnTrace& f,
                                 const std::vector<double>& dy, std::vector<double>* dx_abs = nullptr) {
  std::vector<double> dx(size_t(H), 0.0);
  if (dx_abs) dx_abs->assign(size_t(H), 0.0);
  for (int64_t i = 0; i < I; ++i) {
    double dh = 0;
    for (int64_t h = 0; h < H; ++h) {
      dh += w.down[size_t(h * I + i)] * dy[size_t(h)];
      gw.down[size_t(h * I + i)] += dy[size_t(h)] * f.h[size_t(i)];
    }
    const double a = f.a[size_t(i)], sg = sigmoid(a);
    const double da = dh * f.b[size_t(i)] * sg * (1.0 + a * (1.0 - sg));
    const double db = dh * a * sg;
    for (int64_t h = 0; h < H; ++h) {
      gw.gate[size_t(i * H + h)] += da * x[size_t(h)];
      gw.up[size_t(i * H + h)] += db * x[size_t(h)];
      dx[size_t(h)] += da * w.gate[size_t(i * H + h)] + db * w.up[size_t(i * H + h)];
      if (dx_abs) (*dx_abs)[size_t(h)] += std::fabs(da * w.gate[size_t(i * H + h)]) + std::fabs(db * w.up[size_t(i * H + h)]);
    }
  }
  return dx;
}

void check_input(const MoeConfig& cfg, const RefWeights& w, const std::vector<double>& x) {
  SQZ_CHECK(x.size() % size_t(cfg.H()) == 0, "reference: x has ", x.size(), " values, not a multiple of H=", cfg.H());
  SQZ_CHECK(w.experts.size() == size_t(cfg.E()), "reference: weights hold ", w.experts.size(), " experts, config E=",
            cfg.E());
}

// Forward and (when dout) backward in one pass.
void run(const MoeConfig& cfg, const RefWeights& w, const std::vector<double>& x, const std::vector<double>* dout,
         ReferenceOptions opt, ReferenceResult* res, ReferenceGrads* grads) {
  check_input(cfg, w, x);
  const int64_t H = cfg.H(), I = cfg.I(), N = int64_t(x.size()) / H;
  const int K = cfg.K();
  const Rounder wire{cfg.shape().payload, opt.emulate_payload && cfg.shape().payload != Payload::F32};
  if (res) res->out.assign(size_t(N * H), 0.0), res->out_flip.assign(size_t(N * H), 0.0), res->expert.clear(), res->gate.clear();
  if (grads) {
    grads->dx.assign(size_t(N * H), 0.0), grads->dw = RefWeights::zeros(cfg);
    grads->dx_flip.assign(size_t(N * H), 0.0);
    grads->router_flip.assign(size_t(cfg.E() * H), 0.0), grads->router_bias_flip.assign(size_t(cfg.E()), 0.0);
  }
  // A value the layer computes after the router (H terms), an expert's two projections
  // (H, then I terms): at most this many chained accumulation steps.
  const int64_t chain = H + I + cfg.E();
  for (int64_t t = 0; t < N; ++t) {
    std::vector<double> xt(x.begin() + t * H, x.begin() + (t + 1) * H), xr(static_cast<size_t>(H));
    xr = xt;
    wire.round_row(xr);
    const Route r = route_token(cfg, w, xt.data());
    std::vector<std::vector<double>> ys, y_flip;
    std::vector<FfnTrace> traces;
    for (int k = 0; k < K; ++k) {
      traces.push_back(ffn(w.experts[size_t(r.sel[size_t(k)])], H, I, xr));
      std::vector<double> y = traces.back().y, err(static_cast<size_t>(H));
      for (int64_t h = 0; h < H; ++h) err[size_t(h)] = f32_err(chain, traces.back().y_abs[size_t(h)]);
      std::vector<double> fl = wire.flips(y, err);
      wire.round_row(y);
      ys.push_back(std::move(y));
      y_flip.push_back(std::move(fl));
    }
    FfnTrace shared;
    if (cfg.shape().shared_expert) shared = ffn(w.shared, H, I, xt);
    if (res) {
      for (int k = 0; k < K; ++k) {
        res->expert.push_back(r.sel[size_t(k)]);
        res->gate.push_back(r.g[size_t(k)]);
        for (int64_t h = 0; h < H; ++h) {
          res->out[size_t(t * H + h)] += r.g[size_t(k)] * ys[size_t(k)][size_t(h)];
          res->out_flip[size_t(t * H + h)] += r.g[size_t(k)] * y_flip[size_t(k)][size_t(h)];
        }
      }
      if (cfg.shape().shared_expert)
        for (int64_t h = 0; h < H; ++h) res->out[size_t(t * H + h)] += shared.y[size_t(h)];
    }
    if (!grads) continue;
    std::vector<double> d(dout->begin() + t * H, dout->begin() + (t + 1) * H), dr(static_cast<size_t>(H));
    dr = d;
    wire.round_row(dr);
    double* dx = &grads->dx[size_t(t * H)];
    double* dx_flip = &grads->dx_flip[size_t(t * H)];
    std::vector<double> dg(static_cast<size_t>(K)), dg_flip(static_cast<size_t>(K));
    for (int k = 0; k < K; ++k) {
      for (int64_t h = 0; h < H; ++h) {
        dg[size_t(k)] += d[size_t(h)] * ys[size_t(k)][size_t(h)];
        dg_flip[size_t(k)] += std::fabs(d[size_t(h)]) * y_flip[size_t(k)][size_t(h)];
      }
      std::vector<double> dy(static_cast<size_t>(H)), dxk_abs;
      for (int64_t h = 0; h < H; ++h) dy[size_t(h)] = r.g[size_t(k)] * dr[size_t(h)];
      const int32_t e = r.sel[size_t(k)];
      auto dxk = ffn_backward(w.experts[size_t(e)], grads->dw.experts[size_t(e)], H, I, xr, traces[size_t(k)], dy,
                              &dxk_abs);
      std::vector<double> err(static_cast<size_t>(H));
      for (int64_t h = 0; h < H; ++h) err[size_t(h)] = f32_err(2 * chain, dxk_abs[size_t(h)]);
      const std::vector<double> fl = wire.flips(dxk, err);
      wire.round_row(dxk);
      for (int64_t h = 0; h < H; ++h) {
        dx[h] += dxk[size_t(h)];
        dx_flip[h] += fl[size_t(h)];
      }
    }
    if (cfg.shape().shared_expert) {
      auto dxs = ffn_backward(w.shared, grads->dw.shared, H, I, xt, shared, d);
      for (int64_t h = 0; h < H; ++h) dx[h] += dxs[size_t(h)];
    }
    // Router: gate_k = s_k / S over the selected experts.
    const int E = cfg.E();
    double gdg = 0;
    for (int k = 0; k < K; ++k) gdg += r.g[size_t(k)] * dg[size_t(k)];
    std::vector<double> ds(size_t(E), 0.0), dl(static_cast<size_t>(E));
    for (int k = 0; k < K; ++k) ds[size_t(r.sel[size_t(k)])] = (dg[size_t(k)] - gdg) / r.S;
    if (cfg.shape().scoring == Scoring::Softmax) {
      double dot = 0;
      for (int e = 0; e < E; ++e) dot += ds[size_t(e)] * r.s[size_t(e)];
      for (int e = 0; e < E; ++e) dl[size_t(e)] = r.s[size_t(e)] * (ds[size_t(e)] - dot);
    } else {
      for (int e = 0; e < E; ++e) dl[size_t(e)] = ds[size_t(e)] * r.s[size_t(e)] * (1.0 - r.s[size_t(e)]);
    }
    for (int e = 0; e < E; ++e) {
      grads->dw.router_bias[size_t(e)] += dl[size_t(e)];
      for (int64_t h = 0; h < H; ++h) {
        grads->dw.router[size_t(e * H + h)] += dl[size_t(e)] * xt[size_t(h)];
        dx[h] += dl[size_t(e)] * w.router[size_t(e * H + h)];
      }
    }
    // Flips in y move dg; bound their way through the same steps with magnitudes
    // (|s| <= 1, softmax Jacobian rows sum to at most 2|s_e| |ds|max).
    double dg_flip_sum = 0, ds_flip_max = 0;
    for (int k = 0; k < K; ++k) dg_flip_sum += r.g[size_t(k)] * dg_flip[size_t(k)];
    for (int k = 0; k < K; ++k) ds_flip_max = std::max(ds_flip_max, (dg_flip[size_t(k)] + dg_flip_sum) / r.S);
    if (ds_flip_max > 0)
      for (int e = 0; e < E; ++e) {
        const double dl_flip = 2.0 * r.s[size_t(e)] * ds_flip_max;
        grads->router_bias_flip[size_t(e)] += dl_flip;
        for (int64_t h = 0; h < H; ++h) {
          grads->router_flip[size_t(e * H + h)] += dl_flip * std::fabs(xt[size_t(h)]);
          dx_flip[h] += dl_flip * std::fabs(w.router[size_t(e * H + h)]);
        }
      }
  }
}

}  // namespace

double layer_f32_tolerance(const MoeConfig& cfg, int64_t N) {
  return 4.0 * double(cfg.H() + cfg.I() + cfg.E() + N) * std::ldexp(1.0, -24);
}

ReferenceResult reference_forward(const MoeConfig& cfg, const RefWeights& w, const std::vector<double>& x,
                                  ReferenceOptions opt) {
  ReferenceResult r;
  run(cfg, w, x, nullptr, opt, &r, nullptr);
  return r;
}

ReferenceGrads reference_backward(const MoeConfig& cfg, const RefWeights& w, const std::vector<double>& x,
                                  const std::vector<double>& dout, ReferenceOptions opt) {
  SQZ_CHECK(dout.size() == x.size(), "reference: dout has ", dout.size(), " values, x has ", x.size());
  ReferenceGrads g;
  run(cfg, w, x, &dout, opt, nullptr, &g);
  return g;
}

}  // namespace squeeze::mok

// vision/resample.cpp — see resample.h.
#include "vision/resample.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace squeeze::vision {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}

double lanczos(double x) { return (x > -3.0 && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0; }

// For each output sample along one axis: the first input sample and the fixed-point
// weights of the window.
struct Taps {
  std::vector<int> first, count;
  std::vector<int32_t> weights;  // [out, ksize]
  int ksize = 0;
};

Taps compute_taps(int in_size, int out_size, Resample filter) {
  const double support_unscaled = filter == Resample::Bicubic ? 2.0 : 3.0;
  const double scale = double(in_size) / double(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = support_unscaled * filterscale;
  Taps t;
  t.ksize = int(std::ceil(support)) * 2 + 1;
  t.first.resize(size_t(out_size));
  t.count.resize(size_t(out_size));
  t.weights.assign(size_t(out_size) * size_t(t.ksize), 0);
  std::vector<double> k(size_t(t.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(int(center - support + 0.5), 0);
    const int xmax = std::min(int(center + support + 0.5), in_size) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double arg = (x + xmin - center + 0.5) * ss;
      const double w = filter == Resample::Bicubic ? bicubic(arg) : lanczos(arg);
      k[size_t(x)] = w;
      ww += w;
    }
    for (int x = 0; x < xmax; ++x) {
      const double w = ww != 0.0 ? k[size_t(x)] / ww : k[size_t(x)];
      // Round half away from zero, as Pillow's normalize_coeffs_8bpc.
      const double f = w * double(1 << kPrecisionBits);
      t.weights[size_t(xx) * size_t(t.ksize) + size_t(x)] = int32_t(f < 0 ? f - 0.5 : f + 0.5);
    }
    t.first[size_t(xx)] = xmin;
    t.count[size_t(xx)] = xmax;
  }
  return t;
}

uint8_t clip8(int64_t v) {
  v >>= kPrecisionBits;
  return uint8_t(std::clamp<int64_t>(v, 0, 255));
}

Image resample_horizontal(const Image& in, int out_w, Resample filter) {
  const Taps t = compute_taps(in.width, out_w, filter);
  Image out;
  out.width = out_w;
  out.height = in.height;
  out.rgb.resize(size_t(out_w) * size_t(in.height) * 3);
  for (int y = 0; y < in.height; ++y)
    for (int xx = 0; xx < out_w; ++xx) {
      const int32_t* k = t.weights.data() + size_t(xx) * size_t(t.ksize);
      for (int c = 0; c < 3; ++c) {
        int64_t ss = int64_t(1) << (kPrecisionBits - 1);
        for (int x = 0; x < t.count[size_t(xx)]; ++x) ss += int64_t(in.at(y, t.first[size_t(xx)] + x, c)) * k[x];
        out.rgb[(size_t(y) * size_t(out_w) + size_t(xx)) * 3 + size_t(c)] = clip8(ss);
      }
    }
  return out;
}

Image resample_vertical(const Image& in, int out_h, Resample filter) {
  const Taps t = compute_taps(in.height, out_h, filter);
  Image out;
  out.width = in.width;
  out.height = out_h;
  out.rgb.resize(size_t(in.width) * size_t(out_h) * 3);
  for (int yy = 0; yy < out_h; ++yy) {
    const int32_t* k = t.weights.data() + size_t(yy) * size_t(t.ksize);
    for (int x = 0; x < in.width; ++x)
      for (int c = 0; c < 3; ++c) {
        int64_t ss = int64_t(1) << (kPrecisionBits - 1);
        for (int y = 0; y < t.count[size_t(yy)]; ++y) ss += int64_t(in.at(t.first[size_t(yy)] + y, x, c)) * k[y];
        out.rgb[(size_t(yy) * size_t(in.width) + size_t(x)) * 3 + size_t(c)] = clip8(ss);
      }
  }
  return out;
}

}  // namespace

const char* resample_name(Resample r) { return r == Resample::Bicubic ? "bicubic" : "lanczos"; }

Resample parse_resample(const std::string& name) {
  if (name == "bicubic") return Resample::Bicubic;
  if (name == "lanczos") return Resample::Lanczos;
  fail("unknown resampling filter '", name, "' (expected bicubic or lanczos)");
}

Image resize(const Image& img, int width, int height, Resample filter) {
  SQZ_CHECK(width > 0 && height > 0, "resize: target of ", width, " x ", height, " pixels");
  SQZ_CHECK(img.width > 0 && img.height > 0 && img.rgb.size() == size_t(img.width) * size_t(img.height) * 3,
            "resize: empty or malformed image");
  // Pillow skips a pass whose size does not change.
  Image h = width == img.width ? img : resample_horizontal(img, width, filter);
  return height == h.height ? h : resample_vertical(h, height, filter);
}

}  // namespace squeeze::vision

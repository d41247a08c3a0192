// train/loss_plot.cpp — see loss_plot.h.
#include "train/loss_plot.h"

#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "gguf/atomic_file.h"

namespace squeeze::train {
namespace {

// 5×7 glyphs, rows top to bottom, '1' = ink, in a 5×9 cell: descenders (g p q y) are
// drawn two rows lower. Upper case is drawn as lower case; anything missing as '?'.
struct Glyph {
  char c;
  std::array<const char*, 7> rows;
  bool descends = false;
};
constexpr Glyph kFont[] = {
    {' ', {"00000", "00000", "00000", "00000", "00000", "00000", "00000"}},
    {'?', {"01110", "10001", "00001", "00010", "00100", "00000", "00100"}},
    {'0', {"01110", "10001", "10011", "10101", "11001", "10001", "01110"}},
    {'1', {"00100", "01100", "00100", "00100", "00100", "00100", "01110"}},
    {'2', {"01110", "10001", "00001", "00010", "00100", "01000", "11111"}},
    {'3', {"11111", "00010", "00100", "00010", "00001", "10001", "01110"}},
    {'4', {"00010", "00110", "01010", "10010", "11111", "00010", "00010"}},
    {'5', {"11111", "10000", "11110", "00001", "00001", "10001", "01110"}},
    {'6', {"00110", "01000", "10000", "11110", "10001", "10001", "01110"}},
    {'7', {"11111", "00001", "00010", "00100", "01000", "01000", "01000"}},
    {'8', {"01110", "10001", "10001", "01110", "10001", "10001", "01110"}},
    {'9', {"01110", "10001", "10001", "01111", "00001", "00010", "01100"}},
    {'a', {"00000", "00000", "01110", "00001", "01111", "10001", "01111"}},
    {'b', {"10000", "10000", "10110", "11001", "10001", "10001", "11110"}},
    {'c', {"00000", "00000", "01110", "10000", "10000", "10001", "01110"}},
    {'d', {"00001", "00001", "01101", "10011", "10001", "10001", "01111"}},
    {'e', {"00000", "00000", "01110", "10001", "11111", "10000", "01110"}},
    {'f', {"00110", "01001", "01000", "11100", "01000", "01000", "01000"}},
    {'g', {"01111", "10001", "10001", "01111", "00001", "00001", "01110"}, true},
    {'h', {"10000", "10000", "10110", "11001", "10001", "10001", "10001"}},
    {'i', {"00100", "00000", "01100", "00100", "00100", "00100", "01110"}},
    {'j', {"00010", "00000", "00110", "00010", "00010", "10010", "01100"}},
    {'k', {"10000", "10000", "10010", "10100", "11000", "10100", "10010"}},
    {'l', {"01100", "00100", "00100", "00100", "00100", "00100", "01110"}},
    {'m', {"00000", "00000", "11010", "10101", "10101", "10001", "10001"}},
    {'n', {"00000", "00000", "10110", "11001", "10001", "10001", "10001"}},
    {'o', {"00000", "00000", "01110", "10001", "10001", "10001", "01110"}},
    {'p', {"11110", "10001", "10001", "11110", "10000", "10000", "10000"}, true},
    {'q', {"01111", "10001", "10001", "01111", "00001", "00001", "00001"}, true},
    {'r', {"00000", "00000", "10110", "11001", "10000", "10000", "10000"}},
    {'s', {"00000", "00000", "01110", "10000", "01110", "00001", "11110"}},
    {'t', {"01000", "01000", "11100", "01000", "01000", "01001", "00110"}},
    {'u', {"00000", "00000", "10001", "10001", "10001", "10011", "01101"}},
    {'v', {"00000", "00000", "10001", "10001", "10001", "01010", "00100"}},
    {'w', {"00000", "00000", "10001", "10001", "10101", "10101", "01010"}},
    {'x', {"00000", "00000", "10001", "01010", "00100", "01010", "10001"}},
    {'y', {"10001", "10001", "10001", "01111", "00001", "00001", "01110"}, true},
    {'z', {"00000", "00000", "11111", "00010", "00100", "01000", "11111"}},
    {'.', {"00000", "00000", "00000", "00000", "00000", "01100", "01100"}},
    {',', {"00000", "00000", "00000", "00000", "01100", "00100", "01000"}},
    {'-', {"00000", "00000", "00000", "11111", "00000", "00000", "00000"}},
    {':', {"00000", "01100", "01100", "00000", "01100", "01100", "00000"}},
    {'(', {"00010", "00100", "01000", "01000", "01000", "00100", "00010"}},
    {')', {"01000", "00100", "00010", "00010", "00010", "00100", "01000"}},
    {'/', {"00000", "00001", "00010", "00100", "01000", "10000", "00000"}},
    {'=', {"00000", "00000", "11111", "00000", "11111", "00000", "00000"}},
    {'+', {"00000", "00100", "00100", "11111", "00100", "00100", "00000"}},
    {'_', {"00000", "00000", "00000", "00000", "00000", "00000", "11111"}},
    {'%', {"11000", "11001", "00010", "00100", "01000", "10011", "00011"}},
    {'\'', {"01100", "00100", "01000", "00000", "00000", "00000", "00000"}},
};

const Glyph& glyph(char c) {
  if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  for (const Glyph& g : kFont)
    if (g.c == c) return g;
  return kFont[1];
}

struct Rgb {
  uint8_t r, g, b;
};
constexpr Rgb kWhite{255, 255, 255}, kInk{40, 40, 40}, kGrid{225, 225, 225}, kTrain{31, 119, 180}, kVal{230, 110, 10};

class Canvas {
 public:
  Canvas(int w, int h) : img_{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3, 255)} {}
  void set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= img_.width || y >= img_.height) return;
    uint8_t* p = img_.rgb.data() + (static_cast<size_t>(y) * img_.width + x) * 3;
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
  }
  void rect(int x0, int y0, int x1, int y1, Rgb c) {
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) set(x, y, c);
  }
  // A line `width` pixels thick (Bresenham, a square brush).
  void line(double x0, double y0, double x1, double y1, Rgb c, int width = 2) {
    int ax = static_cast<int>(std::lround(x0)), ay = static_cast<int>(std::lround(y0));
    const int bx = static_cast<int>(std::lround(x1)), by = static_cast<int>(std::lround(y1));
    const int dx = std::abs(bx - ax), dy = -std::abs(by - ay), sx = ax < bx ? 1 : -1, sy = ay < by ? 1 : -1;
    int err = dx + dy;
    for (;;) {
      rect(ax - (width - 1) / 2, ay - (width - 1) / 2, ax + width / 2, ay + width / 2, c);
      if (ax == bx && ay == by) break;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, ax += sx;
      if (e2 <= dx) err += dx, ay += sy;
    }
  }
  static int text_width(const std::string& s, int scale) { return static_cast<int>(s.size()) * 6 * scale; }
  void text(int x, int y, const std::string& s, Rgb c, int scale = 2) {
    for (char ch : s) {
      const Glyph& g = glyph(ch);
      const int y0 = y + (g.descends ? 2 * scale : 0);
      for (int r = 0; r < 7; ++r)
        for (int col = 0; col < 5; ++col)
          if (g.rows[static_cast<size_t>(r)][col] == '1')
            rect(x + col * scale, y0 + r * scale, x + col * scale + scale - 1, y0 + r * scale + scale - 1, c);
      x += 6 * scale;
    }
  }
  PlotImage take() { return std::move(img_); }

 private:
  PlotImage img_;
};

std::string number(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-3)) std::snprintf(buf, sizeof buf, "%.0e", v);
  else std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Tick values covering [lo, hi]: 1-2-5 steps on a linear axis; on a log axis the powers
// of ten, with 2 and 5 between them when the range is under two decades.
std::vector<double> ticks(double lo, double hi, bool log_scale) {
  std::vector<double> out;
  if (log_scale) {
    const bool dense = std::log10(hi / lo) < 2;
    for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= static_cast<int>(std::ceil(std::log10(hi))); ++e)
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, e);
        if ((m == 1.0 || dense) && v >= lo * 0.999 && v <= hi * 1.001) out.push_back(v);
      }
    return out;
  }
  const double raw = (hi - lo) / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) out.push_back(std::fabs(v) < 1e-12 ? 0 : v);
  return out;
}

// The frame both charts share: grid lines and tick labels for the given tick values at
// the positions fx / fy give them, the axes, the axis labels and the title.
struct Frame {
  int W, H, left, px0, px1, py0, py1;
};
template <typename FX, typename FY>
void draw_frame(Canvas& c, const Frame& f, const std::vector<double>& x_ticks, const std::vector<double>& y_ticks, FX fx,
                FY fy, const std::string& x_label, const std::string& y_label, const std::string& title) {
  for (double v : y_ticks) {
    const int y = static_cast<int>(std::lround(fy(v)));
    c.rect(f.px0, y, f.px1, y, kGrid);
    const std::string s = number(v);
    c.text(f.px0 - 8 - Canvas::text_width(s, 2), y - 7, s, kInk);
  }
  for (double v : x_ticks) {
    const int x = static_cast<int>(std::lround(fx(v)));
    c.rect(x, f.py0, x, f.py1, kGrid);
    const std::string t = number(v);
    c.text(x - Canvas::text_width(t, 2) / 2, f.py1 + 10, t, kInk);
  }
  c.rect(f.px0, f.py0, f.px0, f.py1, kInk);
  c.rect(f.px0, f.py1, f.px1, f.py1, kInk);
  c.text(f.px1 - Canvas::text_width(x_label, 2), f.H - 22, x_label, kInk);
  c.text(8, 34, y_label, kInk);
  c.text(f.left, 10, title.substr(0, static_cast<size_t>((f.W - f.left) / 12)), kInk);
}

}  // namespace

PlotImage render_loss_plot(const std::vector<StepRecord>& history, const std::string& title) {
  SQZ_CHECK(!history.empty(), "loss plot: no steps to plot");
  constexpr int W = 900, H = 520, left = 90, right = 30, top = 60, bottom = 60;
  double lo = INFINITY, hi = -INFINITY;
  for (const StepRecord& r : history)
    for (double v : {static_cast<double>(r.loss), static_cast<double>(r.val_loss)})
      if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  SQZ_CHECK(std::isfinite(lo), "loss plot: no positive finite loss to plot");
  if (hi <= lo * 1.0001) lo *= 0.9, hi *= 1.1;
  const bool log_scale = hi / lo > 5;
  if (log_scale) {
    lo /= 1.15, hi *= 1.15;
  } else {
    const double pad = 0.06 * (hi - lo);
    lo = std::max(0.0, lo - pad), hi += pad;
  }
  const double x_lo = static_cast<double>(history.front().step), x_hi = std::max(x_lo + 1, static_cast<double>(history.back().step));
  const int px0 = left, px1 = W - right, py0 = top, py1 = H - bottom;
  auto fx = [&](double s) { return px0 + (s - x_lo) / (x_hi - x_lo) * (px1 - px0); };
  auto fy = [&](double v) {
    const double t = log_scale ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (v - lo) / (hi - lo);
    return py1 - t * (py1 - py0);
  };

  Canvas c(W, H);
  draw_frame(c, {W, H, left, px0, px1, py0, py1}, ticks(x_lo, x_hi, false), ticks(lo, hi, log_scale), fx, fy, "step",
             log_scale ? "loss (log scale)" : "loss", title);

  const StepRecord* prev = nullptr;
  for (const StepRecord& r : history) {
    if (std::isfinite(r.loss) && r.loss > 0) {
      if (prev) c.line(fx(static_cast<double>(prev->step)), fy(prev->loss), fx(static_cast<double>(r.step)), fy(r.loss), kTrain);
      prev = &r;
    }
  }
  const StepRecord* prev_val = nullptr;
  for (const StepRecord& r : history) {
    if (!(std::isfinite(r.val_loss) && r.val_loss > 0)) continue;
    const double x = fx(static_cast<double>(r.step)), y = fy(r.val_loss);
    if (prev_val) c.line(fx(static_cast<double>(prev_val->step)), fy(prev_val->val_loss), x, y, kVal);
    c.rect(static_cast<int>(x) - 3, static_cast<int>(y) - 3, static_cast<int>(x) + 3, static_cast<int>(y) + 3, kVal);
    prev_val = &r;
  }
  // Legend, top right inside the axes.
  const int lx = px1 - 250, ly = py0 + 10;
  c.rect(lx - 8, ly - 6, px1 - 8, ly + 44, kWhite);
  c.line(lx, ly + 7, lx + 30, ly + 7, kTrain);
  c.text(lx + 40, ly, "training loss", kInk);
  c.line(lx, ly + 31, lx + 30, ly + 31, kVal);
  c.rect(lx + 12, ly + 28, lx + 18, ly + 34, kVal);
  c.text(lx + 40, ly + 24, "validation loss", kInk);
  return c.take();
}

PlotImage render_point_plot(const std::vector<LabelledPoint>& points, const std::string& x_label,
                            const std::string& y_label, const std::string& title) {
  SQZ_CHECK(!points.empty(), "point plot: no points");
  constexpr int W = 900, H = 520, left = 90, right = 40, top = 60, bottom = 60;
  double x_hi = 0, y_hi = 0;
  for (const auto& p : points) {
    SQZ_CHECK(std::isfinite(p.x) && std::isfinite(p.y), "point plot: a point is not finite");
    x_hi = std::max(x_hi, p.x), y_hi = std::max(y_hi, p.y);
  }
  x_hi = x_hi > 0 ? x_hi * 1.1 : 1, y_hi = y_hi > 0 ? y_hi * 1.1 : 1;
  const int px0 = left, px1 = W - right, py0 = top, py1 = H - bottom;
  auto fx = [&](double v) { return px0 + v / x_hi * (px1 - px0); };
  auto fy = [&](double v) { return py1 - v / y_hi * (py1 - py0); };
  Canvas c(W, H);
  draw_frame(c, {W, H, left, px0, px1, py0, py1}, ticks(0, x_hi, false), ticks(0, y_hi, false), fx, fy, x_label, y_label,
             title);
  for (size_t i = 0; i < points.size(); ++i) {
    const double x = fx(points[i].x), y = fy(points[i].y);
    if (i > 0) c.line(fx(points[i - 1].x), fy(points[i - 1].y), x, y, kTrain);
  }
  for (const auto& p : points) {
    const int x = static_cast<int>(std::lround(fx(p.x))), y = static_cast<int>(std::lround(fy(p.y)));
    c.rect(x - 4, y - 4, x + 4, y + 4, kVal);
    c.text(x + 8, y + 6, p.label, kInk);
  }
  return c.take();
}

namespace {

void write_png(const std::string& path, PlotImage img) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(img.width);
  image.height = static_cast<png_uint_32>(img.height);
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  SQZ_CHECK(png_image_write_to_memory(&image, nullptr, &size, 0, img.rgb.data(), 0, nullptr) && size > 0, path,
            ": cannot encode the plot (", image.message, ")");
  std::vector<uint8_t> bytes(size);
  SQZ_CHECK(png_image_write_to_memory(&image, bytes.data(), &size, 0, img.rgb.data(), 0, nullptr), path,
            ": cannot encode the plot (", image.message, ")");
  bytes.resize(size);
  gguf::AtomicFile out(path);
  out.write(bytes);
  out.commit();
}

}  // namespace

void write_loss_plot(const std::string& path, const std::vector<StepRecord>& history, const std::string& title) {
  write_png(path, render_loss_plot(history, title));
}

void write_point_plot(const std::string& path, const std::vector<LabelledPoint>& points, const std::string& x_label,
                      const std::string& y_label, const std::string& title) {
  write_png(path, render_point_plot(points, x_label, y_label, title));
}

}  // namespace squeeze::train

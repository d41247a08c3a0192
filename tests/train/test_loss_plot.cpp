// tests/train/test_loss_plot.cpp — the loss-curve PNG: the curves are drawn where the
// losses put them (linear and log scale), the file decodes to exactly the rendered
// pixels, and nothing to plot or nowhere to write is an error that leaves no file.
#include <gtest/gtest.h>

#include <png.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "core/error.h"
#include "train/loss_plot.h"

namespace squeeze::train {
namespace {

std::vector<StepRecord> curve(int steps, float from, float to, int val_every) {
  std::vector<StepRecord> h;
  for (int s = 1; s <= steps; ++s) {
    StepRecord r;
    r.step = s;
    r.loss = from * std::pow(to / from, static_cast<float>(s - 1) / static_cast<float>(steps - 1));
    r.val_loss = s % val_every == 0 ? r.loss * 1.1f : -1;
    h.push_back(r);
  }
  return h;
}

bool is(const PlotImage& img, int x, int y, uint8_t r, uint8_t g, uint8_t b) {
  const uint8_t* p = img.rgb.data() + (static_cast<size_t>(y) * img.width + x) * 3;
  return p[0] == r && p[1] == g && p[2] == b;
}

// The rows of column x drawn in the training-loss colour.
std::vector<int> train_rows(const PlotImage& img, int x) {
  std::vector<int> rows;
  for (int y = 0; y < img.height; ++y)
    if (is(img, x, y, 31, 119, 180)) rows.push_back(y);
  return rows;
}

TEST(LossPlot, CurvesAreWhereTheLossesPutThem) {
  // A falling training loss: its line must descend from left to right, monotonically.
  for (const auto& h : {curve(100, 9.0f, 0.2f, 10), curve(100, 5.0f, 4.0f, 25)}) {
    const PlotImage img = render_loss_plot(h, "glimmer-kjv test run");
    ASSERT_EQ(img.rgb.size(), static_cast<size_t>(img.width) * img.height * 3);
    int last_y = -1, columns = 0;
    for (int x = 0; x < img.width - 300; x += 10) {  // the legend sits top right
      const auto rows = train_rows(img, x);
      if (rows.empty()) continue;
      ++columns;
      const int y = (rows.front() + rows.back()) / 2;
      EXPECT_GE(y, last_y - 1) << "x " << x;  // screen y grows downward as the loss falls
      last_y = y;
    }
    EXPECT_GT(columns, 40);  // the line spans the plot width
    int val_pixels = 0;
    for (size_t i = 0; i < img.rgb.size(); i += 3)
      val_pixels += img.rgb[i] == 230 && img.rgb[i + 1] == 110 && img.rgb[i + 2] == 10;
    EXPECT_GT(val_pixels, 100);  // the validation markers
  }
  // On the log scale (9 → 0.2) equal loss ratios are equal heights: the exponential
  // curve is a straight line, so its midpoint sits halfway between its ends.
  const PlotImage img = render_loss_plot(curve(101, 9.0f, 0.2f, 1000), "log");
  auto y_at = [&](int x) {
    const auto rows = train_rows(img, x);
    EXPECT_FALSE(rows.empty()) << "x " << x;
    return rows.empty() ? -1.0 : (rows.front() + rows.back()) / 2.0;
  };
  const double y0 = y_at(150), y1 = y_at(350), y2 = y_at(550);
  EXPECT_GT(y2 - y0, 100);  // it does fall
  EXPECT_NEAR(y1, (y0 + y2) / 2, 3.0);
}

TEST(LossPlot, PngDecodesToTheRenderedPixels) {
  const auto h = curve(40, 6.0f, 3.0f, 8);
  const std::string path = (std::filesystem::temp_directory_path() / ("squeeze_plot_" + std::to_string(::getpid()) + ".png")).string();
  write_loss_plot(path, h, "roundtrip");
  const PlotImage want = render_loss_plot(h, "roundtrip");
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&image, path.c_str())) << image.message;
  image.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> got(PNG_IMAGE_SIZE(image));
  ASSERT_TRUE(png_image_finish_read(&image, nullptr, got.data(), 0, nullptr)) << image.message;
  EXPECT_EQ(static_cast<int>(image.width), want.width);
  EXPECT_EQ(static_cast<int>(image.height), want.height);
  EXPECT_EQ(got, want.rgb);
  std::filesystem::remove(path);
}

TEST(LossPlot, NothingToPlotOrNowhereToWriteIsAnError) {
  EXPECT_THROW(render_loss_plot({}, "empty"), Error);
  std::vector<StepRecord> nan(3);
  for (auto& r : nan) r.loss = NAN;
  EXPECT_THROW(render_loss_plot(nan, "nan"), Error);
  const std::string dir = (std::filesystem::temp_directory_path() / ("squeeze_plot_missing_" + std::to_string(::getpid()))).string();
  EXPECT_THROW(write_loss_plot(dir + "/x.png", curve(5, 2, 1, 2), "t"), Error);
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace squeeze::train

TEST(PointPlot, DrawsLabelledPointsAndRefusesBadInput) {
  const auto img = squeeze::train::render_point_plot({{0, 20, "none"}, {40, 55, "low"}, {150, 80, "xhigh"}},
                                                      "mean thinking tokens", "accuracy %", "t");
  EXPECT_EQ(img.width, 900);
  EXPECT_EQ(img.height, 520);
  int64_t ink = 0;
  for (size_t i = 0; i + 2 < img.rgb.size(); i += 3) ink += img.rgb[i] != 255 || img.rgb[i + 1] != 255 || img.rgb[i + 2] != 255;
  EXPECT_GT(ink, 1000);
  EXPECT_THROW(squeeze::train::render_point_plot({}, "x", "y", "t"), std::exception);
  EXPECT_THROW(squeeze::train::render_point_plot({{NAN, 1, "a"}}, "x", "y", "t"), std::exception);
}

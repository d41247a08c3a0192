// train/loss_plot.h — the loss curve of a training run as a PNG (`squeeze train --plot`):
// training loss per step and validation loss where it was measured, against the step,
// on a log scale when the loss spans more than a factor of 5. Drawn here (lines, a 5×7
// bitmap font) and encoded by libpng; written atomically.
#pragma once

#include <string>
#include <vector>

#include "train/trainer.h"

namespace squeeze::train {

struct PlotImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height][width][3]
};

// The chart of `history` (a run's StepRecords, steps increasing) titled `title`.
PlotImage render_loss_plot(const std::vector<StepRecord>& history, const std::string& title);
// render_loss_plot, encoded as PNG at `path`.
void write_loss_plot(const std::string& path, const std::vector<StepRecord>& history, const std::string& title);

// A line through labelled points (e.g. accuracy against mean thinking tokens, one point
// per reasoning level), linear axes from 0, in the same style.
struct LabelledPoint {
  double x = 0, y = 0;
  std::string label;
};
PlotImage render_point_plot(const std::vector<LabelledPoint>& points, const std::string& x_label,
                            const std::string& y_label, const std::string& title);
void write_point_plot(const std::string& path, const std::vector<LabelledPoint>& points, const std::string& x_label,
                      const std::string& y_label, const std::string& title);

}  // namespace squeeze::train

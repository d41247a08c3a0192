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

}  // namespace squeeze::train

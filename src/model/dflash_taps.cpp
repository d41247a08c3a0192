// model/dflash_taps.cpp
#include "model/dflash_taps.h"

#include <cfenv>
#include <cmath>

#include "core/error.h"

namespace squeeze::model {

std::vector<int64_t> dflash_target_layer_ids(int64_t n_target_layers, int64_t n_draft_layers) {
  SQZ_CHECK(n_draft_layers >= 1, "DFlash: the drafter needs at least one layer, got ", n_draft_layers);
  SQZ_CHECK(n_target_layers >= 1, "DFlash: the target needs at least one layer, got ", n_target_layers);
  if (n_draft_layers == 1) return {n_target_layers / 2};
  SQZ_CHECK(n_target_layers >= 4, "DFlash: the default taps need a target of at least 4 layers for ",
            n_draft_layers, " draft layers, got ", n_target_layers, " (list the taps explicitly)");
  const int64_t span = n_target_layers - 4;  // from layer 1 to layer L - 3
  std::vector<int64_t> ids(static_cast<size_t>(n_draft_layers));
  // nearbyint rounds halves to even in the default rounding mode, as Python's round().
  SQZ_CHECK(std::fegetround() == FE_TONEAREST, "DFlash: the FPU rounding mode is not round-to-nearest");
  for (int64_t i = 0; i < n_draft_layers; ++i) {
    const double x = 1.0 + static_cast<double>(i * span) / static_cast<double>(n_draft_layers - 1);
    ids[static_cast<size_t>(i)] = static_cast<int64_t>(std::nearbyint(x));
  }
  return ids;
}

}  // namespace squeeze::model

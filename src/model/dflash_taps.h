// model/dflash_taps.h — which target layers a DFlash drafter reads its context from.
//
// A DFlash drafter conditions on the target's hidden states after a few of its layers
// (the "taps"), concatenated and fused. Files and configs may list the taps; when they do
// not, the DFlash reference code's default rule applies: for L target layers and n draft
// layers, id_i = round(1 + i·(L − 4)/(n − 1)) for i = 0..n−1 (evenly from layer 1 to
// layer L − 3), and L / 2 (rounded down) when n = 1. Ids are 0-based layer indices.
//
// "round" is Python's: the quotient is a double and halves go to the even neighbour. That
// matters where the spacing is a half: SmolLM2's L = 30 with n = 5 gives 1, 8, 14, 20, 27
// (7.5 → 8, 20.5 → 20), where rounding halves up would give 1, 8, 14, 21, 27.
#pragma once

#include <cstdint>
#include <vector>

namespace squeeze::model {

// The default taps for a target of n_target_layers layers and a drafter of n_draft_layers
// layers. Throws squeeze::Error when the rule has no valid answer (n_draft_layers < 1,
// or a target too shallow for n_draft_layers > 1: fewer than 4 layers).
std::vector<int64_t> dflash_target_layer_ids(int64_t n_target_layers, int64_t n_draft_layers);

}  // namespace squeeze::model

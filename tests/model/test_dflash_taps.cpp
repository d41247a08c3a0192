// tests/model/test_dflash_taps.cpp — the DFlash drafter's default target taps.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "model/dflash_taps.h"

namespace {

using squeeze::model::dflash_target_layer_ids;
using Ids = std::vector<int64_t>;

TEST(DflashTaps, SpreadFromLayerOneToThreeBeforeTheLast) {
  EXPECT_EQ(dflash_target_layer_ids(52, 5), (Ids{1, 13, 25, 37, 49}));  // Muse Glimmer's default
  EXPECT_EQ(dflash_target_layer_ids(36, 5), (Ids{1, 9, 17, 25, 33}));
  EXPECT_EQ(dflash_target_layer_ids(36, 2), (Ids{1, 33}));
  EXPECT_EQ(dflash_target_layer_ids(4, 3), (Ids{1, 1, 1}));
}

TEST(DflashTaps, HalvesRoundToEvenAsThePythonReference) {
  // SmolLM2-135M: 30 layers; 1 + i·26/4 = 1, 7.5, 14, 20.5, 27.
  EXPECT_EQ(dflash_target_layer_ids(30, 5), (Ids{1, 8, 14, 20, 27}));
  // 1 + i·(24 − 4)/8 = 1, 3.5, 6, 8.5, 11, 13.5, 16, 18.5, 21.
  EXPECT_EQ(dflash_target_layer_ids(24, 9), (Ids{1, 4, 6, 8, 11, 14, 16, 18, 21}));
}

TEST(DflashTaps, OneDraftLayerTapsTheMiddle) {
  EXPECT_EQ(dflash_target_layer_ids(30, 1), (Ids{15}));
  EXPECT_EQ(dflash_target_layer_ids(31, 1), (Ids{15}));
  EXPECT_EQ(dflash_target_layer_ids(1, 1), (Ids{0}));
}

TEST(DflashTaps, ImpossibleShapesAreRefused) {
  EXPECT_THROW(dflash_target_layer_ids(30, 0), squeeze::Error);
  EXPECT_THROW(dflash_target_layer_ids(0, 1), squeeze::Error);
  EXPECT_THROW(dflash_target_layer_ids(3, 2), squeeze::Error);
  EXPECT_THROW(dflash_target_layer_ids(-5, 3), squeeze::Error);
}

}  // namespace

// tests/model/test_expert_stack.cpp — views of a stack of experts (model/weights.h): each
// expert's rows, and a fused gate/up's halves, with their packed groups where they start one.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "model/weights.h"
#include "quant/packed.h"
#include "quant/quantize.h"

namespace squeeze::model {
namespace {

using quant::GgmlType;

// A view's product with the unpacked rows of the same range, and with those rows packed on
// their own: the packed view must be the latter bit for bit (same groups, same kernel).
void expect_view_matches(const quant::QMatrix& view, const std::vector<float>& x) {
  std::vector<float> plain(static_cast<size_t>(view.rows)), viewed(plain);
  quant::QMatrix unpacked = view;
  unpacked.packed = nullptr;
  quant::gemv(default_thread_pool(), unpacked, x.data(), plain.data());
  quant::gemv(default_thread_pool(), view, x.data(), viewed.data());
  if (!view.packed) {
    EXPECT_EQ(viewed, plain);
    return;
  }
  std::vector<uint8_t> own(static_cast<size_t>(quant::packed_bytes(view.type, view.rows, view.cols)));
  quant::pack_matrix(view.type, view.data, view.rows, view.cols, own.data());
  quant::QMatrix alone = unpacked;
  alone.packed = own.data();
  std::vector<float> want(plain.size());
  quant::gemv(default_thread_pool(), alone, x.data(), want.data());
  EXPECT_EQ(viewed, want);
  for (size_t r = 0; r < plain.size(); ++r) EXPECT_NEAR(viewed[r], plain[r], 0.05f * (1.0f + std::fabs(plain[r])));
}

TEST(ExpertStack, ViewsTakeTheirPackedGroups) {
  constexpr int64_t n_expert = 3, per = 48, cols = 256;
  std::mt19937 rng(17);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(n_expert * per * cols)), x(static_cast<size_t>(cols));
  for (float& v : w) v = n(rng);
  for (float& v : x) v = n(rng);
  const auto bytes = quant::quantize_tensor({.type = GgmlType::Q4_K, .src = w.data(), .rows = n_expert * per, .cols = cols});
  ExpertStack s{.all = {.type = GgmlType::Q4_K, .data = bytes.data(), .rows = n_expert * per, .cols = cols},
                .n_expert = n_expert};
  ASSERT_TRUE(s.packable());
  std::vector<uint8_t> packed(static_cast<size_t>(quant::packed_bytes(GgmlType::Q4_K, s.all.rows, cols)));
  quant::pack_matrix(GgmlType::Q4_K, s.all.data, s.all.rows, cols, packed.data());
  s.all.packed = packed.data();
  for (int64_t e = 0; e < n_expert; ++e) {
    SCOPED_TRACE(e);
    const quant::QMatrix whole = s.expert(e);
    EXPECT_EQ(whole.rows, per);
    EXPECT_NE(whole.packed, nullptr);
    expect_view_matches(whole, x);
    // A fused gate/up's halves (24 rows each here: the second starts inside a group).
    const quant::QMatrix first = s.rows_of(e, 0, 16), second = s.rows_of(e, 16, 32), odd = s.rows_of(e, 24, 24);
    EXPECT_NE(first.packed, nullptr);
    EXPECT_NE(second.packed, nullptr);
    EXPECT_EQ(odd.packed, nullptr);
    for (const auto& v : {first, second, odd}) expect_view_matches(v, x);
  }
  EXPECT_THROW(s.rows_of(3, 0, 16), Error);
  EXPECT_THROW(s.rows_of(0, 40, 16), Error);
  EXPECT_THROW(s.rows_of(0, -1, 4), Error);
  // Experts of 40 rows end inside a group: the stack stays unpacked.
  EXPECT_FALSE((ExpertStack{.all = {.type = GgmlType::Q4_K, .data = bytes.data(), .rows = 120, .cols = cols}, .n_expert = 3}
                    .packable()));
}

}  // namespace
}  // namespace squeeze::model

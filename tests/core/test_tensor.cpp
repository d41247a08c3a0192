// tests/core/test_tensor.cpp — views, aligned buffers.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/aligned_buffer.h"
#include "core/tensor.h"

namespace squeeze {
namespace {

TEST(TensorView, ContiguousStridesAndOffsets) {
  AlignedBuffer buf(2 * 3 * 4 * sizeof(float));
  TensorView v(buf.data(), DType::F32, {2, 3, 4});
  EXPECT_EQ(v.ndim, 3);
  EXPECT_EQ(v.numel(), 24);
  EXPECT_EQ(v.strides[0], 12);
  EXPECT_EQ(v.strides[1], 4);
  EXPECT_EQ(v.strides[2], 1);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.offset({1, 2, 3}), 23);
  EXPECT_EQ(v.offset({1}), 12);
  EXPECT_EQ(v.nbytes(), 96u);
  EXPECT_THROW(v.offset({2, 0, 0}), Error);
  EXPECT_THROW(v.offset({0, 0, 0, 0}), Error);
}

TEST(TensorView, RowsAndTransposedViews) {
  AlignedBuffer buf(6 * sizeof(float));
  float* p = buf.as<float>();
  for (int i = 0; i < 6; ++i) p[i] = static_cast<float>(i);
  TensorView m(p, DType::F32, {2, 3});
  EXPECT_EQ(m.row<float>(1)[2], 5.0f);
  TensorView t = m;  // transpose by swapping shape and strides
  std::swap(t.shape[0], t.shape[1]);
  std::swap(t.strides[0], t.strides[1]);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(p[t.offset({2, 1})], 5.0f);
  EXPECT_THROW(t.row<float>(0), Error);
}

TEST(TensorView, RejectsBadShapes) {
  float x = 0;
  EXPECT_THROW(TensorView(&x, DType::F32, {1, 2, 3, 4, 5}), Error);
  EXPECT_THROW(TensorView(&x, DType::F32, {-1}), Error);
}

TEST(AlignedBuffer, AlignedZeroedAndMovable) {
  for (size_t n : {1u, 7u, 64u, 4097u}) {
    AlignedBuffer b(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % AlignedBuffer::kAlignment, 0u);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(b.as<uint8_t>()[i], 0);
    AlignedBuffer moved(std::move(b));
    EXPECT_EQ(moved.size(), n);
    EXPECT_EQ(b.data(), nullptr);
  }
  EXPECT_THROW(AlignedBuffer(SIZE_MAX - 8), Error);
}

}  // namespace
}  // namespace squeeze

// train/tape.h — the reverse-mode autograd tape: 2-D tensors (rows × cols, row-major)
// recorded in creation order, each op pushing a hand-written backward closure; backward()
// runs the closures in reverse (llm.c's mirrored backward, but assembled per step, so
// the model code reads as a straight forward pass).
//
// Parameters are leaves over storage the caller owns (the model's weights and gradient
// buffers): backward() *adds* into those gradients, which is what gradient accumulation
// over micro-batches wants; the caller zeroes them once per optimiser step.
// Templated on the scalar so that every op also runs in double for the finite-difference
// tests (tests/train); training uses float.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"

namespace squeeze::train {

struct Var {
  int32_t id = -1;
};

template <typename T>
class Tape {
 public:
  explicit Tape(ThreadPool* pool = nullptr) : pool_(pool ? *pool : default_thread_pool()) {}
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  ThreadPool& pool() const { return pool_; }

  // A leaf over external storage: value [rows, cols]; grad (same size) receives the
  // accumulated gradient, or is empty for a constant input.
  Var leaf(std::span<T> value, std::span<T> grad, int64_t rows, int64_t cols) {
    SQZ_CHECK(static_cast<int64_t>(value.size()) == rows * cols, "tape leaf: ", value.size(), " values for [", rows,
              ", ", cols, "]");
    SQZ_CHECK(grad.empty() || grad.size() == value.size(), "tape leaf: gradient size ", grad.size(), " != ",
              value.size());
    Node& n = push(rows, cols);
    n.value = value.data();
    n.grad = grad.empty() ? nullptr : grad.data();
    return {static_cast<int32_t>(nodes_.size() - 1)};
  }
  // A constant owned by the tape (no gradient).
  Var constant(std::vector<T> values, int64_t rows, int64_t cols) {
    SQZ_CHECK(static_cast<int64_t>(values.size()) == rows * cols, "tape constant: ", values.size(),
              " values for [", rows, ", ", cols, "]");
    Node& n = push(rows, cols);
    n.own_value = std::move(values);
    n.value = n.own_value.data();
    return {static_cast<int32_t>(nodes_.size() - 1)};
  }
  // An op's output [rows, cols], zero-filled; it has a gradient iff needs_grad (true
  // when any input has one).
  Var output(int64_t rows, int64_t cols, bool needs_grad) {
    Node& n = push(rows, cols);
    n.own_value.assign(static_cast<size_t>(rows * cols), T(0));
    n.value = n.own_value.data();
    if (needs_grad) {
      n.own_grad.assign(static_cast<size_t>(rows * cols), T(0));
      n.grad = n.own_grad.data();
    }
    return {static_cast<int32_t>(nodes_.size() - 1)};
  }
  // Registers the backward step of the op just recorded.
  void on_backward(std::function<void()> fn) { backward_.push_back(std::move(fn)); }

  T* value(Var v) { return node(v).value; }
  const T* value(Var v) const { return node(v).value; }
  T* grad(Var v) { return node(v).grad; }  // nullptr: no gradient flows here
  bool needs_grad(Var v) const { return node(v).grad != nullptr; }
  int64_t rows(Var v) const { return node(v).rows; }
  int64_t cols(Var v) const { return node(v).cols; }
  int64_t size(Var v) const { return node(v).rows * node(v).cols; }
  size_t n_nodes() const { return nodes_.size(); }

  // Seeds d(loss)/d(loss) = 1 for a scalar loss and runs every backward step in reverse.
  void backward(Var loss) {
    SQZ_CHECK(size(loss) == 1, "backward() needs a scalar loss, got [", rows(loss), ", ", cols(loss), "]");
    SQZ_CHECK(needs_grad(loss), "backward(): the loss does not depend on any parameter");
    grad(loss)[0] += T(1);
    for (auto it = backward_.rbegin(); it != backward_.rend(); ++it) (*it)();
  }
  // Forgets every node and closure (leaf storage is untouched).
  void clear() {
    nodes_.clear();
    backward_.clear();
  }

 private:
  struct Node {
    int64_t rows = 0, cols = 0;
    T* value = nullptr;
    T* grad = nullptr;
    std::vector<T> own_value, own_grad;
  };
  Node& push(int64_t rows, int64_t cols) {
    SQZ_CHECK(rows >= 0 && cols >= 0, "tape: negative shape [", rows, ", ", cols, "]");
    nodes_.emplace_back();
    nodes_.back().rows = rows;
    nodes_.back().cols = cols;
    return nodes_.back();
  }
  const Node& node(Var v) const {
    SQZ_CHECK(v.id >= 0 && static_cast<size_t>(v.id) < nodes_.size(), "tape: unknown variable ", v.id);
    return nodes_[static_cast<size_t>(v.id)];
  }
  Node& node(Var v) { return const_cast<Node&>(static_cast<const Tape*>(this)->node(v)); }

  ThreadPool& pool_;
  std::deque<Node> nodes_;  // deque: node addresses stay valid as the tape grows
  std::vector<std::function<void()>> backward_;
};

}  // namespace squeeze::train

// mok/combine_streamed.cpp — the pull combine overlapped with the experts: each owner
// raises a count of its published output rows as its compute workers finish minibatches,
// and each home rank sums a slot as soon as the count has passed the slot's row.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "mok/dispatcher.h"

namespace squeeze::mok {

void Dispatcher::publish_output_rows(int64_t rows) {
  std::lock_guard<std::mutex> lock(fetch_mu_);  // one transport caller at a time (MPI_THREAD_SERIALIZED)
  SQZ_CHECK(outputs_open_, "combine: publish_output_rows without open outputs");
  // Minibatches may report out of order; a later one being done implies every earlier one is.
  if (rows <= rows_published_) return;
  t_.flag_add(me_, f_out_rows_, 0, uint64_t(rows - rows_published_));
  rows_published_ = rows;
}

int64_t Dispatcher::wait_published(int owner, int64_t need, const std::atomic<bool>& cancelled) {
  using Clock = std::chrono::steady_clock;
  const uint64_t base = cpub_epoch_ * kRowRound;
  const auto deadline = Clock::now() + t_.timeout();
  auto nap = std::chrono::microseconds(5);
  for (int polls = 0;; ++polls) {
    uint64_t v;
    {
      std::lock_guard<std::mutex> lock(fetch_mu_);
      v = t_.flag_load(owner, f_out_rows_, 0);
    }
    if (v >= base + uint64_t(need)) return int64_t(std::min(v - base, kRowRound));
    if (cancelled.load(std::memory_order_relaxed)) return -1;
    if (v >= base + kRowRound)
      fail("rank ", owner, " closed its outputs with fewer rows than rank ", me_, " expects (", need,
           "): the ranks' routings differ");
    if (Clock::now() > deadline)
      fail("rank ", owner, " did not arrive within ", t_.timeout().count(), " ms (rank ", me_,
           " waiting for streamed combine: outputs published)");
    // Ranks' threads outnumber the cores: after a few polls, sleep, longer each time
    // (a minibatch of expert products takes milliseconds; detecting it 0.2 ms late is cheap).
    if (polls < 8) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(200));
    }
  }
}

bool Dispatcher::combine_streamed(const DispatchHandle& h, const CombineOut& out, const std::atomic<bool>& cancelled) {
  SQZ_CHECK(h.seg_start.size() == size_t(EL_ * R_ + 1), "combine: the handle is not from a dispatch");
  SQZ_CHECK(outputs_open_, "combine: combine_streamed without open outputs");
  for (int64_t s : h.dest_seg)
    SQZ_CHECK(s >= 0, "combine: the streamed combine needs the layout a pull dispatch learns");
  const int64_t H = cfg_.H();
  if (out.out) std::memset(out.out, 0, size_t(h.tokens * H) * 4);
  std::vector<float> tmp(static_cast<size_t>(H));
  // Owners in ascending order, each owner's experts in ascending order: every token meets
  // its slots in ascending expert order, as sum_slots sums them.
  for (int d = 0; d < R_; ++d) {
    const std::byte* owner = t_.peer(d, out_pub_);
    int64_t published = 0;
    for (int e = 0; e < EL_; ++e) {
      const int g = d * EL_ + e;
      const int64_t n = h.send_count[size_t(g)], start = h.dest_seg[size_t(g)];
      const int32_t* slots = h.send_rows.data() + h.send_begin[size_t(g)];
      for (int64_t j = 0; j < n;) {
        if (published <= start + j) {
          published = wait_published(d, start + j + 1, cancelled);
          if (published < 0) return false;
        }
        const int64_t m = std::min(n - j, published - (start + j));
        const std::byte* rows;
        if (owner) {
          rows = owner + size_t(start + j) * rb_;
          if (d != me_) {  // read across, though not by get
            std::lock_guard<std::mutex> lock(fetch_mu_);
            traffic_.payload_bytes += uint64_t(m) * rb_;
          }
        } else {
          staging_.resize(size_t(m) * rb_);
          std::lock_guard<std::mutex> lock(fetch_mu_);
          get_counted(staging_.data(), d, out_pub_, size_t(start + j) * rb_, size_t(m) * rb_, true);
          t_.flush();
          rows = staging_.data();
        }
        for (int64_t i = 0; i < m; ++i) add_slot(h, out, slots[j + i], rows + size_t(i) * rb_, tmp.data());
        j += m;
      }
    }
  }
  return true;
}

void Dispatcher::close_outputs(int64_t rows) {
  SQZ_CHECK(outputs_open_, "combine: close_outputs without open outputs");
  publish_output_rows(rows);
  ++cpub_epoch_;
  t_.flag_add(me_, f_out_rows_, 0, kRowRound - uint64_t(rows_published_));
  t_.flag_add(me_, f_comb_pub_, 0, 1);
  rows_published_ = 0;
  outputs_open_ = false;
  end_round(f_combine_credit_);  // this rank has read every owner's rows it needed
}

}  // namespace squeeze::mok

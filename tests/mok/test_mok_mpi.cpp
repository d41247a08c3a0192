// tests/mok/test_mok_mpi.cpp — the MoK checks over MPI ranks (run under mpirun):
//   test_mok_mpi shm|rma
// Tagged dispatch/combine for every style, the layer against the reference, and the
// timeout path. Every rank runs every check; exit status 0 only when all ranks pass.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "core/error.h"
#include "mok/mpi_transport.h"
#include "mok_checks.h"

using namespace squeeze;
using namespace squeeze::mok;
using testing::RouteMode;

namespace {
int failures = 0;
int checks = 0;

void run(const char* name, const std::function<void()>& fn) {
  ++checks;
  int ok = 1;
  try {
    fn();
  } catch (const std::exception& e) {
    ok = 0;
    std::fprintf(stderr, "FAIL %s: %s\n", name, e.what());
  }
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) ++failures;
}
}  // namespace

int main(int argc, char** argv) {
  ensure_mpi_initialised();
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const MpiMode mode = parse_mpi_mode(argc > 1 ? argv[1] : "shm");
  {
    auto t = make_mpi_transport(mode);
    t->set_timeout(std::chrono::seconds(20));
    for (int K : {1, 2, 8})
      for (auto rm : {RouteMode::Balanced, RouteMode::Skewed, RouteMode::OneExpert})
        for (auto ds : {DispatchStyle::PushNegotiated, DispatchStyle::PushPrivate, DispatchStyle::Pull})
          for (auto cs : {CombineStyle::Push, CombineStyle::Pull}) {
            MoeShape s{.tokens_per_rank = 5, .hidden = 12, .inter = 6, .n_experts = 8, .top_k = K, .n_ranks = size};
            MoeConfig cfg(s);
            const std::string name = std::string("dispatch ") + dispatch_style_name(ds) + "/" +
                                     combine_style_name(cs) + " " + testing::route_mode_name(rm) + " " +
                                     cfg.describe();
            run(name.c_str(), [&] { testing::check_dispatch_tagged(*t, cfg, ds, cs, rm, K == 2 ? 1 : -1, 3); });
            if (K != 2 && rm != RouteMode::Balanced) continue;
            s.payload = rm == RouteMode::Skewed ? Payload::F32 : Payload::BF16;
            s.shared_expert = K == 2;
            MoeConfig lcfg(s);
            run(("layer " + name).c_str(), [&] { testing::check_layer(*t, lcfg, {ds, cs}, rm, -1, 9); });
            if (ds != DispatchStyle::Pull || cs != CombineStyle::Pull) continue;
            // The fused pipeline: several workers per process, a ring of two slots, tiles of
            // two rows (MPI called from worker threads; RMA gets one caller at a time).
            PipelineOptions po;
            po.comm_workers = 2;
            po.compute_workers = 2;
            po.tile_rows = 2;
            po.ring_slots = 2;
            run(("fused layer " + name).c_str(),
                [&] { testing::check_layer(*t, lcfg, LayerOptions::fused_pull(po), rm, -1, 9); });
          }
    // The Alltoallv layer (the collective baseline) through the same checks as the others.
    for (auto rm : {RouteMode::Balanced, RouteMode::Skewed})
      for (Payload p : {Payload::F32, Payload::BF16}) {
        MoeShape s{.tokens_per_rank = 5, .hidden = 12, .inter = 6, .n_experts = 8, .top_k = 2, .n_ranks = size};
        s.payload = p;
        const MoeConfig cfg(s);
        const std::string name = std::string("alltoallv ") + testing::route_mode_name(rm) + " " + cfg.describe();
        run(name.c_str(), [&] {
          testing::check_dispatch_tagged(*t, cfg, DispatchStyle::Alltoallv, CombineStyle::Alltoallv, rm, -1, 3);
        });
        run(("layer " + name).c_str(), [&] {
          testing::check_layer(*t, cfg, {DispatchStyle::Alltoallv, CombineStyle::Alltoallv}, rm, -1, 9);
        });
      }
    // The last rank never arrives: everyone else must fail within the timeout, naming it.
    run("timeout", [&] {
      MoeConfig cfg(MoeShape{.tokens_per_rank = 4, .hidden = 8, .inter = 4, .n_experts = 2 * size, .top_k = 2,
                             .n_ranks = size});
      Dispatcher d(cfg, *t);
      t->set_timeout(std::chrono::milliseconds(300));
      if (rank != size - 1) {
        Routing r = testing::make_routing(cfg, rank, cfg.T(), RouteMode::Balanced, 1);
        std::vector<float> x(size_t(cfg.T() * cfg.H()), 1.0f);
        const auto t0 = std::chrono::steady_clock::now();
        std::string msg;
        try {
          d.dispatch(DispatchStyle::Pull, x.data(), r);
        } catch (const Error& e) {
          msg = e.what();
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        SQZ_CHECK(msg.find("rank " + std::to_string(size - 1) + " did not arrive within 300 ms") != std::string::npos,
                  "expected a timeout naming the last rank, got '", msg, "'");
        // No upper bound: a wall-clock limit flakes under parallel sanitizer runs, and
        // ctest's TIMEOUT already fails a hang.
        SQZ_CHECK(s >= 0.3, "gave up after ", s, " s, before the 300 ms timeout");
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
      }
      MPI_Barrier(MPI_COMM_WORLD);
    });
    // Collectives too: the last rank skips an all-reduce (the layer backward's), then a
    // window creation (a Dispatcher's alloc); the others fail within the timeout naming
    // it, where a bare MPI_Allreduce / MPI_Win_allocate used to hang them forever.
    const auto absent = [&](const char* what, const std::function<void()>& collective) {
      t->set_timeout(std::chrono::milliseconds(300));
      if (rank != size - 1) {
        const auto t0 = std::chrono::steady_clock::now();
        std::string msg;
        try {
          collective();
        } catch (const Error& e) {
          msg = e.what();
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::string want = "rank " + std::to_string(size - 1) + " did not arrive within 300 ms";
        SQZ_CHECK(msg.find(want) != std::string::npos && msg.find(what) != std::string::npos &&
                      msg.find('\n') == std::string::npos,
                  "expected one line naming the last rank and '", what, "', got '", msg, "'");
        // No upper bound: a wall-clock limit flakes under parallel sanitizer runs, and
        // ctest's TIMEOUT already fails a hang.
        SQZ_CHECK(s >= 0.3, "gave up after ", s, " s, before the 300 ms timeout");
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
      }
      MPI_Barrier(MPI_COMM_WORLD);
    };
    run("all-reduce timeout", [&] {
      absent("all-reduce", [&] {
        double v = 1;
        t->allreduce(&v, 1, ReduceOp::Sum);
      });
    });
    run("window creation timeout", [&] { absent("window creation", [&] { t->alloc(64); }); });
  }
  if (rank == 0) std::printf("%s mode, %d ranks: %d of %d checks passed\n", mpi_mode_name(mode), size,
                             checks - failures, checks);
  return failures == 0 ? 0 : 1;
}

#!/usr/bin/env bash
# bench/moe_pipeline.sh — the fused-pipeline figures of docs/moe.md: `squeeze moe pipeline`
# (fused vs unfused pull layer, forward and backward, in one run each) on
#   1. the Kimi-like shape, where the experts dominate on a CPU (T = 128, K = 8, H = 7168,
#      I = 2048: ~90 GFLOP of expert forward per rank; E = 16 keeps the weights in memory),
#      with the minibatch sweep;
#   2. a communication-heavy configuration: small I and the InfiniBand-class link model,
#      with its minibatch sweep;
#   3. the Kimi-like shape with MXFP8 payloads;
#   4. over MPI shared memory (when mpirun is found), with the MPI_Alltoallv layer beside:
#      the Kimi-like shape, and the communication-heavy shape on the real transport.
# R = 2 (one rank per core on the 2-core machine); every figure is a ratio within one run.
# usage: bench/moe_pipeline.sh [ITERS]   (output: stdout, markdown tables)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SQ="$ROOT/build/release/tools/squeeze"
[ -x "$SQ" ] || { echo "moe_pipeline: build squeeze first (scripts/test or scripts/demo)" >&2; exit 1; }
ITERS="${1:-3}"
KIMI=(--tokens 128 --hidden 7168 --inter 2048 --experts 16 --topk 8)
echo "## Kimi-like shape, in-process ranks"
"$SQ" moe pipeline --ranks 2 "${KIMI[@]}" --iters "$ITERS" --sweep 1,2,4,8,16
echo
echo "## Communication-heavy: I = 64, InfiniBand-class link model"
"$SQ" moe pipeline --ranks 2 --tokens 128 --hidden 7168 --inter 64 --experts 16 --topk 8 --link ib --iters "$ITERS" \
  --sweep 1,2,4,8,16,32
echo
echo "## Kimi-like shape, MXFP8 payloads"
"$SQ" moe pipeline --ranks 2 "${KIMI[@]}" --payload mxfp8 --iters "$ITERS" --no-backward
if command -v mpirun > /dev/null; then
  echo
  echo "## Kimi-like shape, MPI shared-memory windows"
  mpirun --allow-run-as-root -np 2 "$SQ" moe pipeline --transport mpi-shm "${KIMI[@]}" --iters "$ITERS"
  echo
  echo "## Communication-heavy: I = 64, MPI shared-memory windows"
  mpirun --allow-run-as-root -np 2 "$SQ" moe pipeline --transport mpi-shm --tokens 128 --hidden 7168 --inter 64 \
    --experts 16 --topk 8 --iters "$ITERS"
else
  echo "moe_pipeline: mpirun not found, the MPI run is skipped" >&2
fi

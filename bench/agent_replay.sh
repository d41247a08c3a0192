#!/usr/bin/env bash
# bench/agent_replay.sh — the agent-context figures of docs/vision.md: a 30-step trajectory
# of 1280 x 800 screenshots (generated application windows rendered by headless Chromium,
# scripts/vlm/make_trajectory.py) replayed with `squeeze agent-replay` through the shipped
# Muse Glimmer KJV student with a random small projector (the replay measures the language
# model's prefill, which retention and reuse change; the weights' values do not matter),
# keeping the last 3 screenshots, at the CPU default of 1024 image tokens per screenshot:
# every reuse setting (recompute all, plain rollback, ring snapshots) with eviction one at a
# time and in batches of 3 and 5, in one run.
# usage: bench/agent_replay.sh [OUT_DIR]   (output: stdout, a markdown table; OUT_DIR/replay.json)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SQ="$ROOT/build/release/tools/squeeze"
[ -x "$SQ" ] || { echo "agent_replay: build squeeze first (scripts/test or scripts/demo)" >&2; exit 1; }
OUT="${1:-$ROOT/build/agent-trajectory}"
MODEL="$ROOT/models/muse-glimmer-kjv.f16.gguf"
[ -f "$OUT/trajectory.json" ] || python3 "$ROOT/scripts/vlm/make_trajectory.py" "$OUT" --steps 30 --size 1280x800
[ -f "$OUT/mmproj.gguf" ] || "$SQ" make-model --mmproj-for "$MODEL" -o "$OUT/mmproj.gguf" > /dev/null
"$SQ" agent-replay -m "$MODEL" --mmproj "$OUT/mmproj.gguf" "$OUT/trajectory.json" --keep 3 --evict-batch 1,3,5 \
  --max-image-tokens 1024 --ctx 16384 --json "$OUT/replay.json"

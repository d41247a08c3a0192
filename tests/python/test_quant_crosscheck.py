"""tests/python/test_quant_crosscheck.py — our block formats against an independent
implementation, the `gguf` package's numpy (de)quantizers:
  * gguf.quants.dequantize of the blocks we write equals our dequantization bit for bit;
  * blocks gguf.quants writes (Q8_0, Q4_0, F16, BF16) dequantize identically with ours;
  * our searching quantizer's error is no worse than gguf's round-to-nearest one.
Our blocks come from the test-only tool tests/quant/quant_dump (found via SQUEEZE_BUILD).
"""
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from gguf import quants

BUILD = os.environ.get("SQUEEZE_BUILD", "build/release")
TOOL = os.path.join(BUILD, "tests", "quant", "quant_dump")
TYPES = ["Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16"]


def data(kind, rows, cols, seed):
    rng = np.random.default_rng(seed)
    if kind == "gauss":
        return (rng.standard_normal((rows, cols)) * 0.02).astype(np.float32)
    return rng.standard_t(3, (rows, cols)).astype(np.float32)  # heavy tails / outliers


def ours_quantize(tmp_path, qtype, x, importance=None):
    rows, cols = x.shape
    src, blocks, deq = tmp_path / "in.f32", tmp_path / "out.bin", tmp_path / "deq.f32"
    x.astype("<f4").tofile(src)
    args = [TOOL, "quantize", qtype, str(rows), str(cols), str(src), str(blocks), str(deq)]
    if importance is not None:
        imp = tmp_path / "imp.f32"
        importance.astype("<f4").tofile(imp)
        args.append(str(imp))
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return (np.fromfile(blocks, dtype=np.uint8).reshape(rows, -1),
            np.fromfile(deq, dtype="<f4").reshape(rows, cols))


def ours_dequantize(tmp_path, qtype, blocks, cols):
    src, out = tmp_path / "blocks.bin", tmp_path / "back.f32"
    np.ascontiguousarray(blocks).tofile(src)
    r = subprocess.run([TOOL, "dequantize", qtype, str(blocks.shape[0]), str(cols), str(src), str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return np.fromfile(out, dtype="<f4").reshape(blocks.shape[0], cols)


def stable_seed(*parts):
    """A seed from the test's parameters that every process agrees on (Python's hash() of
    a str is salted per process, so a failure seeded with it could not be reproduced)."""
    return zlib.crc32("/".join(map(str, parts)).encode()) & 0xFFFF


def test_stable_seed_is_the_same_in_every_process():
    code = "import sys; sys.path.insert(0, %r); import test_quant_crosscheck as t; print(t.stable_seed('Q4_K', 'gauss'))"
    code %= os.path.dirname(os.path.abspath(__file__))
    seeds = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env=dict(os.environ, PYTHONHASHSEED=h)).stdout for h in ["1", "2", "3"]}
    assert len(seeds) == 1 and seeds.pop().strip() == str(stable_seed("Q4_K", "gauss"))


def same_bits(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("qtype", TYPES)
@pytest.mark.parametrize("kind", ["gauss", "heavy"])
def test_gguf_dequantizes_our_blocks_bit_for_bit(tmp_path, qtype, kind):
    x = data(kind, 16, 1024, seed=stable_seed(qtype, kind))
    blocks, ours = ours_quantize(tmp_path, qtype, x)
    block_size, type_size = quants.GGML_QUANT_SIZES[T[qtype]]
    assert blocks.shape == (16, 1024 // block_size * type_size)
    theirs = quants.dequantize(blocks, T[qtype])
    assert same_bits(theirs, ours)


def test_importance_weighted_blocks_also_match(tmp_path):
    x = data("gauss", 8, 512, seed=3)
    imp = np.random.default_rng(4).lognormal(0, 1.5, 512).astype(np.float32)
    for qtype in ["Q4_K", "Q5_K", "Q6_K", "Q4_0"]:
        blocks, ours = ours_quantize(tmp_path, qtype, x, imp)
        assert same_bits(quants.dequantize(blocks, T[qtype]), ours), qtype


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "F16", "BF16"])
def test_we_dequantize_gguf_blocks_bit_for_bit(tmp_path, qtype):
    x = data("heavy", 16, 512, seed=11)
    theirs_blocks = quants.quantize(x, T[qtype])
    raw = np.ascontiguousarray(theirs_blocks).view(np.uint8).reshape(16, -1)
    ours = ours_dequantize(tmp_path, qtype, raw, 512)
    assert same_bits(quants.dequantize(raw, T[qtype]), ours)


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0"])
def test_our_search_is_no_worse_than_round_to_nearest(tmp_path, qtype):
    x = data("gauss", 64, 1024, seed=5)
    _, ours = ours_quantize(tmp_path, qtype, x)
    theirs = quants.dequantize(quants.quantize(x, T[qtype]), T[qtype])
    err_ours = float(np.mean((ours.astype(np.float64) - x) ** 2))
    err_theirs = float(np.mean((theirs.astype(np.float64) - x) ** 2))
    assert err_ours <= err_theirs


def test_tool_rejects_bad_input(tmp_path):
    x = np.ones((1, 100), np.float32)
    x.tofile(tmp_path / "in.f32")
    r = subprocess.run([TOOL, "quantize", "Q4_K", "1", "100", str(tmp_path / "in.f32"), str(tmp_path / "o"),
                        str(tmp_path / "d")], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "multiple" in r.stderr and r.stderr.count("\n") == 1

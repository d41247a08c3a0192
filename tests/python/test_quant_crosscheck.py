"""tests/python/test_quant_crosscheck.py — our block formats against an independent
implementation, the `gguf` package's numpy (de)quantizers:
  * gguf.quants.dequantize of the blocks we write equals our dequantization bit for bit;
  * blocks gguf.quants writes (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4, F16, BF16) dequantize
    identically with ours, and so do MXFP4 blocks of random bytes (every E8M0 exponent);
  * ggml's round-to-nearest quantizers as we implement them (Q4_1, Q5_0, Q5_1, MXFP4) write
    the bytes gguf.quants.quantize writes;
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
TYPES = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "MXFP4", "Q4_K", "Q5_K", "Q6_K", "F16", "BF16"]
GGML_RTN = ["Q4_1", "Q5_0", "Q5_1", "MXFP4"]  # quant_dump quantize-ggml


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
    for qtype in ["Q4_K", "Q5_K", "Q6_K", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "MXFP4"]:
        blocks, ours = ours_quantize(tmp_path, qtype, x, imp)
        assert same_bits(quants.dequantize(blocks, T[qtype]), ours), qtype


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "MXFP4", "F16", "BF16"])
def test_we_dequantize_gguf_blocks_bit_for_bit(tmp_path, qtype):
    x = data("heavy", 16, 512, seed=11)
    theirs_blocks = quants.quantize(x, T[qtype])
    raw = np.ascontiguousarray(theirs_blocks).view(np.uint8).reshape(16, -1)
    ours = ours_dequantize(tmp_path, qtype, raw, 512)
    assert same_bits(quants.dequantize(raw, T[qtype]), ours)


def test_we_dequantize_random_mxfp4_blocks_bit_for_bit(tmp_path):
    # Any byte is a valid E8M0 exponent: the subnormal scales (0, 1) and those whose larger
    # codes overflow to ±inf (253..255) included; every exponent appears in each column.
    raw = np.random.default_rng(39).integers(0, 256, (256, 8 * 17), dtype=np.uint8)
    raw[:, ::17] = (np.arange(256, dtype=np.uint8)[:, None] + np.arange(8, dtype=np.uint8)[None, :])
    ours = ours_dequantize(tmp_path, "MXFP4", raw, 256)
    with np.errstate(over="ignore"):
        assert same_bits(quants.dequantize(raw, T.MXFP4), ours)


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "MXFP4"])
def test_our_search_is_no_worse_than_round_to_nearest(tmp_path, qtype):
    x = data("gauss", 64, 1024, seed=5)
    _, ours = ours_quantize(tmp_path, qtype, x)
    theirs = quants.dequantize(quants.quantize(x, T[qtype]), T[qtype])
    err_ours = float(np.mean((ours.astype(np.float64) - x) ** 2))
    err_theirs = float(np.mean((theirs.astype(np.float64) - x) ** 2))
    assert err_ours <= err_theirs


def ours_quantize_ggml(tmp_path, qtype, x):
    rows, cols = x.shape
    src, blocks = tmp_path / "in.f32", tmp_path / "rtn.bin"
    x.astype("<f4").tofile(src)
    r = subprocess.run([TOOL, "quantize-ggml", qtype, str(rows), str(cols), str(src), str(blocks)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return np.fromfile(blocks, dtype=np.uint8).reshape(rows, -1)


@pytest.mark.parametrize("qtype", GGML_RTN)
@pytest.mark.parametrize("kind", ["gauss", "heavy", "uniform"])
def test_ggml_round_to_nearest_writes_gguf_bytes(tmp_path, qtype, kind):
    seed = {"Q4_1": 41, "Q5_0": 50, "Q5_1": 51, "MXFP4": 39}[qtype] * 10 + ["gauss", "heavy", "uniform"].index(kind)
    if kind == "uniform":  # all-positive blocks, and a constant and a zero block
        x = np.random.default_rng(seed).uniform(0.5, 2.0, (16, 1024)).astype(np.float32)
        x[0, :32] = 0.75
        x[1, 32:64] = 0.0
    else:
        x = data(kind, 16, 1024, seed)
    ours = ours_quantize_ggml(tmp_path, qtype, x)
    theirs = np.ascontiguousarray(quants.quantize(x, T[qtype])).view(np.uint8).reshape(16, -1)
    assert ours.shape == theirs.shape
    assert np.array_equal(ours, theirs), f"{int(np.sum(ours != theirs))} bytes differ"


def test_tool_rejects_bad_input(tmp_path):
    x = np.ones((1, 100), np.float32)
    x.tofile(tmp_path / "in.f32")
    r = subprocess.run([TOOL, "quantize", "Q4_K", "1", "100", str(tmp_path / "in.f32"), str(tmp_path / "o"),
                        str(tmp_path / "d")], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "multiple" in r.stderr and r.stderr.count("\n") == 1


# Real files (scripts/get-models puts them into $SQUEEZE_MODELS, default build/models):
# every Q4_1 / Q5_0 / Q5_1 tensor, dequantized by us and by gguf-py, bit for bit.
MODELS_DIR = os.environ.get("SQUEEZE_MODELS", os.path.join(os.path.dirname(__file__), "..", "..", "build", "models"))
REAL_MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]


@pytest.mark.parametrize("name", REAL_MODELS)
def test_real_model_tensors_dequantize_like_gguf_py(tmp_path, name):
    from gguf import GGUFReader
    path = os.path.join(MODELS_DIR, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} absent (scripts/get-models)")
    checked = 0
    for t in GGUFReader(path).tensors:
        if t.tensor_type.name not in ("Q4_1", "Q5_0", "Q5_1"):
            continue
        raw = np.ascontiguousarray(t.data).view(np.uint8)
        cols = int(t.shape[0])
        raw = raw.reshape(-1, cols // 32 * quants.GGML_QUANT_SIZES[t.tensor_type][1])
        ours = ours_dequantize(tmp_path, t.tensor_type.name, raw, cols)
        assert same_bits(quants.dequantize(raw, t.tensor_type).reshape(ours.shape), ours), t.name
        checked += 1
    assert checked > 0

"""tests/python/test_model_reference.py — the glimmer/llama forward pass pinned against an
independent numpy implementation that reads the same GGUF file with gguf-py (and
dequantizes with gguf.quants), on random-weight models made by `squeeze make-model`.

Prompts are longer than the sliding window and prefilled in small batches, so the ring
buffers of local layers wrap and chunked prefill is exercised."""
import os
import subprocess

import numpy as np
import pytest
from gguf import GGUFReader
from gguf.quants import dequantize

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
PROMPT = ("The lighthouse keeper climbed the stairs every evening before the sun went down, "
          "counted the steps and wound the clock while ships passed in the night.")


def run(*args):
    r = subprocess.run([SQ, *args], capture_output=True, text=True, errors="replace", timeout=300)
    assert r.returncode == 0, r.stderr
    return r


class Model:
    def __init__(self, path):
        reader = GGUFReader(path)
        self.kv = {f.name: f for f in reader.fields.values()}
        self.arch = self.str("general.architecture")
        self.t = {}
        for t in reader.tensors:
            rows = dequantize(t.data, t.tensor_type).astype(np.float64)
            self.t[t.name] = rows.reshape([int(d) for d in reversed(t.shape)]) if len(t.shape) > 1 else rows.reshape(-1)

    def str(self, key):
        f = self.kv[key]
        return bytes(f.parts[f.data[0]]).decode()

    def num(self, key, default=None):
        if key not in self.kv:
            return default
        f = self.kv[key]
        return f.parts[f.data[0]][0].item()

    def arr(self, key):
        f = self.kv.get(key)
        return None if f is None else [f.parts[i][0].item() for i in f.data]

    def a(self, suffix, default=None):
        return self.num(f"{self.arch}.{suffix}", default)


def rmsnorm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, pos, base):
    # x [n, heads, d]; "normal" pairing: (x[2i], x[2i+1]) rotated by pos * base^(-2i/d)
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2) / d)
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def forward(m, tokens):
    n_layer, E = m.a("block_count"), m.a("embedding_length")
    H, Hk = m.a("attention.head_count"), m.a("attention.head_count_kv")
    D = m.a("attention.key_length", E // H)
    eps = m.a("attention.layer_norm_rms_epsilon")
    window = m.a("attention.sliding_window", 0) or 0
    pattern = m.arr(f"{m.arch}.attention.sliding_window_pattern") or [False] * n_layer
    base_g, base_l = m.a("rope.freq_base", 10000.0), m.a("rope.freq_base_swa", 10000.0)
    n = len(tokens)
    pos = np.arange(n, dtype=np.float64)
    x = m.t["token_embd.weight"][tokens]
    for il in range(n_layer):
        p = f"blk.{il}."
        local = bool(pattern[il]) and window > 0
        base = base_l if local else base_g
        h = rmsnorm(x, m.t[p + "attn_norm.weight"], eps)
        q = rope((h @ m.t[p + "attn_q.weight"].T).reshape(n, H, D), pos, base)
        k = rope((h @ m.t[p + "attn_k.weight"].T).reshape(n, Hk, D), pos, base)
        v = (h @ m.t[p + "attn_v.weight"].T).reshape(n, Hk, D)
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        allowed = (j <= i) & ((j > i - window) if local else True)
        out = np.empty((n, H, D))
        for hh in range(H):
            kv = hh // (H // Hk)
            s = (q[:, hh, :] @ k[:, kv, :].T) / np.sqrt(D)
            s = np.where(allowed, s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            out[:, hh, :] = (s / s.sum(-1, keepdims=True)) @ v[:, kv, :]
        x = x + out.reshape(n, H * D) @ m.t[p + "attn_output.weight"].T
        h = rmsnorm(x, m.t[p + "ffn_norm.weight"], eps)
        g, u = h @ m.t[p + "ffn_gate.weight"].T, h @ m.t[p + "ffn_up.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ m.t[p + "ffn_down.weight"].T
    h = rmsnorm(x, m.t["output_norm.weight"], eps)
    w_out = m.t.get("output.weight", m.t["token_embd.weight"])
    return h @ w_out.T


def our_logits(model, tmp_path, batch, kv="f32"):
    dump = tmp_path / f"dump_b{batch}_{kv}"
    run("generate", "-m", str(model), "-p", PROMPT, "-n", "1", "--temp", "0", "--batch", str(batch),
        "--kv", kv, "--dump", str(dump))
    tokens = np.load(dump / "tokens.npy").astype(np.int64).reshape(-1)
    return tokens, np.load(dump / "logits.npy").astype(np.float64)


def relative_error(ours, ref):
    return np.abs(ours - ref).max() / np.abs(ref).max()


@pytest.mark.parametrize("arch", ["glimmer", "llama"])
def test_f32_forward_matches_numpy(tmp_path, arch):
    path = tmp_path / f"{arch}.gguf"
    run("make-model", "--config", "glimmer-tiny", "--arch", arch, "--seed", "7", "-o", str(path))
    m = Model(str(path))
    tokens, ours = our_logits(path, tmp_path, batch=5)
    assert len(tokens) > 2 * 16, "the prompt must be longer than the window (16)"
    ref = forward(m, tokens)
    # f32 everywhere (f32 KV): each matmul/norm/softmax adds a few units of f32 rounding
    # (6e-8) times sums of at most 160 terms over 8 layers: 1e-4 of the logits' range
    # leaves a wide margin above that and far below any real bug (a wrong position,
    # window or head mapping moves logits by O(1)).
    assert relative_error(ours, ref) < 1e-4


def test_f16_kv_and_batching_agree(tmp_path):
    path = tmp_path / "g.gguf"
    run("make-model", "--config", "glimmer-tiny", "--seed", "3", "-o", str(path))
    _, ref = our_logits(path, tmp_path, batch=64, kv="f32")
    _, chunked = our_logits(path, tmp_path, batch=3, kv="f32")
    # same arithmetic per token whatever the chunking, up to GEMM-vs-GEMV summation order
    assert relative_error(chunked, ref) < 1e-5
    _, half = our_logits(path, tmp_path, batch=7, kv="f16")
    # f16 K/V round each stored value to 2^-11 relative: logits move by ~1e-3 of their range
    assert relative_error(half, ref) < 1e-2


@pytest.mark.parametrize("wtype", ["Q8_0", "Q4_K", "Q6_K"])
def test_quantized_forward_matches_numpy_on_the_same_weights(tmp_path, wtype):
    path = tmp_path / f"q_{wtype}.gguf"
    run("make-model", "--config", "glimmer-tiny", "--embd", "256", "--ff", "512", "--head-dim", "64", "--layers", "4",
        "--type", wtype, "--seed", "5", "-o", str(path))
    m = Model(str(path))
    tokens, ours = our_logits(path, tmp_path, batch=8)
    ref = forward(m, tokens)
    # numpy uses the exact dequantized weights; we also round activations to 8 bits per
    # block (Q8_0 / Q8_K, relative step 1/127 of each block's max), which costs ~1% of
    # the logits' range through 8 layers — a bug in a block layout costs O(100%).
    assert relative_error(ours, ref) < 5e-2
    # and the model's choices survive: greedy picks agree on nearly every position
    assert (ours.argmax(-1) == ref.argmax(-1)).mean() >= 0.9

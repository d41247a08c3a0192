"""tests/python/test_perplexity_cli.py — `squeeze perplexity`: llama-perplexity's method
checked against an independent numpy log-softmax of squeeze's own per-position logits,
its log-probability file read by an independent numpy parser, KL zero against itself
and positive against a Q8_0 copy, and one-line errors for every bad input."""
import math
import os
import re
import subprocess

import numpy as np
import pytest

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
TEXT = ("The lighthouse keeper climbed the stairs every evening before the sun went down. "
        "He counted the steps and wound the clock, trimmed the wick and wiped the lens. "
        "Ships passed in the night and the sea was calm or wild as the wind decided. ") * 6
CTX = 32


def run(*args, check=True):
    r = subprocess.run([SQ, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def number(out, label):
    m = re.search(re.escape(label) + r"\s*:?\s*([0-9.eE+-]+)", out)
    assert m, out
    return float(m.group(1))


def read_logits_file(path):
    """llama-perplexity's --kl-divergence-base layout, parsed independently of squeeze."""
    raw = open(path, "rb").read()
    assert raw[:8] == b"_logits_"
    n_ctx, n_vocab, n_chunk = np.frombuffer(raw[8:20], dtype="<i4")
    tokens = np.frombuffer(raw[20:20 + 4 * n_ctx * n_chunk], dtype="<i4")
    per_chunk = n_ctx - 1 - n_ctx // 2
    row_len = 2 * ((n_vocab + 1) // 2) + 4
    rows = np.frombuffer(raw[20 + 4 * n_ctx * n_chunk:], dtype="<u2").reshape(n_chunk * per_chunk, row_len)
    scale = rows[:, 0:2].copy().view("<f4")[:, 0]
    floor = rows[:, 2:4].copy().view("<f4")[:, 0]
    log_p = scale[:, None] * rows[:, 4:4 + n_vocab].astype(np.float32) + floor[:, None]
    return int(n_ctx), int(n_vocab), int(n_chunk), tokens, log_p


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ppl")
    f32 = d / "f32.gguf"
    run("make-model", "--config", "glimmer-tiny", "--embd", "256", "--ff", "512", "--head-dim", "64", "--layers", "4",
        "--seed", "9", "-o", f32)
    q8 = d / "q8.gguf"
    run("quantize", f32, q8, "Q8_0")
    text = d / "text.txt"
    text.write_text(TEXT)
    base = d / "base.bin"
    out = run("perplexity", "-m", f32, "-f", text, "-c", CTX, "--save-logits", base, "--json", d / "ppl.json").stdout
    return f32, q8, text, base, out


def test_perplexity_is_the_mean_nll_of_the_saved_rows(files):
    """The printed PPL is exp(mean NLL) of each chunk's second half, and the saved file
    holds exactly those positions' log-softmax (within its 16/65535 quantization step)."""
    _, _, _, base, out = files
    ppl = number(out, "Final estimate: PPL =")
    n_ctx, n_vocab, n_chunk, tokens, log_p = read_logits_file(base)
    assert n_ctx == CTX and n_chunk >= 4
    per_chunk = n_ctx - 1 - n_ctx // 2
    nll = []
    for c in range(n_chunk):
        for i in range(per_chunk):
            target = tokens[c * n_ctx + n_ctx // 2 + 1 + i]
            nll.append(-log_p[c * per_chunk + i, target])
    assert math.exp(np.mean(nll)) == pytest.approx(ppl, rel=2e-3)
    # each row is a distribution: the resolved probabilities sum to at most 1, nearly all of it
    mass = np.exp(log_p.astype(np.float64)).sum(axis=1)
    assert np.all(mass < 1.01) and np.all(mass > 0.9)
    # running chunks (4 printed per-chunk figures) and the JSON copy of the result
    assert len(re.findall(r"\[\d+\][0-9.]+,", out)) == n_chunk
    import json
    j = json.load(open(base.parent / "ppl.json"))
    assert j["ppl"] == pytest.approx(ppl, rel=1e-4) and j["chunks"] == n_chunk and j["n_ctx"] == CTX


def test_kl_against_itself_is_zero_and_against_q8_small(files):
    f32, q8, _, base, out = files
    self_out = run("perplexity", "-m", f32, "--kl-base", base).stdout
    assert number(self_out, "Mean KLD") < 1e-4
    assert number(self_out, "Same top p") == pytest.approx(100.0)
    assert number(self_out, "Mean PPL(model)") == pytest.approx(number(out, "Final estimate: PPL ="), rel=1e-3)
    q8_out = run("perplexity", "-m", q8, "--kl-base", base).stdout
    kld = number(q8_out, "Mean KLD")
    assert 1e-6 < kld < 0.05
    assert number(q8_out, "Mean PPL(base)") == pytest.approx(number(self_out, "Mean PPL(base)"), rel=1e-6)


@pytest.mark.parametrize("case", ["neither", "both", "save_and_kl", "ctx_mismatch", "too_short", "ctx_too_big",
                                  "bad_file", "truncated", "vocab", "missing_text", "output_is_input"])
def test_bad_inputs_fail_with_one_line(files, tmp_path, case):
    f32, q8, text, base, _ = files
    short = tmp_path / "short.txt"
    short.write_text("only a few words here")
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"not a logits file at all")
    cut = tmp_path / "cut.bin"
    cut.write_bytes(base.read_bytes()[:-3])
    other_vocab = tmp_path / "v.gguf"
    if case == "vocab":
        run("make-model", "--config", "glimmer-tiny", "--vocab", "600", "--layers", "1", "-o", other_vocab)
    args = {
        "neither": ["-m", f32],
        "both": ["-m", f32, "-f", text, "--kl-base", base],
        "save_and_kl": ["-m", f32, "--kl-base", base, "--save-logits", tmp_path / "x.bin"],
        "ctx_mismatch": ["-m", f32, "--kl-base", base, "-c", 64],
        "too_short": ["-m", f32, "-f", short, "-c", CTX],
        "ctx_too_big": ["-m", f32, "-f", text, "-c", 100000],
        "bad_file": ["-m", f32, "--kl-base", bad],
        "truncated": ["-m", f32, "--kl-base", cut],
        "vocab": ["-m", other_vocab, "--kl-base", base],
        "missing_text": ["-m", f32, "-f", tmp_path / "nope.txt"],
        "output_is_input": ["-m", f32, "-f", text, "-c", CTX, "--save-logits", f32],
    }[case]
    before = f32.read_bytes() if case == "output_is_input" else None
    r = run("perplexity", *args, check=False)
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, r.stderr
    assert "error" in lines[0].lower() or "squeeze" in lines[0].lower(), lines[0]
    if before is not None:
        assert f32.read_bytes() == before

"""tests/python/test_eval_cli.py — `squeeze eval`: perplexity checked against the numpy
reference forward of test_model_reference.py on the same file; KL / agreement against a
base model (zero against itself, small and positive for a Q8_0 copy); one-line errors."""
import math
import os
import re
import subprocess

import numpy as np
import pytest

from test_model_reference import Model, forward

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
TEXT = ("The lighthouse keeper climbed the stairs every evening before the sun went down. "
        "He counted the steps and wound the clock, trimmed the wick and wiped the lens. ") * 4


def run(*args, check=True):
    r = subprocess.run([SQ, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def metric(out, name):
    m = re.search(r"\| " + re.escape(name) + r" \| ([0-9.]+)", out)
    assert m, out
    return float(m.group(1))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval")
    f32 = d / "f32.gguf"
    run("make-model", "--config", "glimmer-tiny", "--embd", "256", "--ff", "512", "--head-dim", "64", "--layers", "4",
        "--seed", "9", "-o", f32)
    q8 = d / "q8.gguf"
    run("quantize", f32, q8, "Q8_0")
    text = d / "held_out.txt"
    text.write_text(TEXT)
    return f32, q8, text


def test_perplexity_matches_numpy_reference(files, tmp_path):
    f32, _, text = files
    out = run("eval", "-m", f32, "-f", text, "--ctx", "32", "--chunks", "2").stdout
    # the same windows through the independent numpy forward
    dump = tmp_path / "d"
    run("generate", "-m", f32, "-p", TEXT, "-n", "1", "--temp", "0", "--dump", dump)
    tokens = np.load(dump / "tokens.npy").astype(np.int64).reshape(-1)
    # generate adds BOS; eval scores the text without it
    m = Model(str(f32))
    bos = m.num("tokenizer.ggml.bos_token_id")
    toks = tokens[1:] if tokens[0] == bos else tokens
    nll, n = 0.0, 0
    for w in range(2):
        win = toks[w * 32:(w + 1) * 32]
        logits = forward(m, win)
        for i in range(31):
            row = logits[i]
            lse = row.max() + math.log(np.exp(row - row.max()).sum())
            nll += lse - row[win[i + 1]]
            n += 1
    assert metric(out, "tokens scored") == n
    # f32 logits agree with numpy to ~1e-6 relative (test_model_reference): log-probs to ~1e-5
    assert metric(out, "perplexity") == pytest.approx(math.exp(nll / n), rel=1e-4)


def test_against_itself_and_a_quantized_copy(files):
    f32, q8, text = files
    same = run("eval", "-m", f32, "-f", text, "--base", f32, "--ctx", "32").stdout
    assert metric(same, "mean KL(base ‖ model)") == 0.0
    assert metric(same, "top-1 agreement with base") == 100.0
    assert metric(same, "perplexity ratio (model / base)") == 1.0
    q = run("eval", "-m", q8, "-f", text, "--base", f32, "--ctx", "32").stdout
    kl = metric(q, "mean KL(base ‖ model)")
    assert 0.0 < kl < 0.05  # Q8_0 weights and activations: a small, non-zero divergence
    assert metric(q, "top-1 agreement with base") >= 80.0
    assert metric(q, "perplexity ratio (model / base)") == pytest.approx(1.0, abs=0.05)


def test_bad_inputs(files, tmp_path):
    f32, _, text = files
    for args, needle in [(["-m", f32, "-f", tmp_path / "none.txt"], "none.txt"),
                         (["-m", f32, "-f", text, "--ctx", "1"], "--ctx"),
                         (["-m", f32, "-f", text, "--ctx", "100000"], "window"),
                         (["-f", text], "-m")]:
        r = run("eval", *args, check=False)
        assert r.returncode != 0
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert needle in r.stderr, r.stderr
    other = tmp_path / "other.gguf"
    run("make-model", "--config", "glimmer-tiny", "--vocab", "300", "-o", other)
    r = run("eval", "-m", f32, "-f", text, "--base", other, check=False)
    assert r.returncode != 0 and "vocabulary" in r.stderr


VERSES = "\n".join(f"And the keeper of lamp number {i} climbed the stairs and looked over the sea at {w}."
                   for i, w in zip(range(40), ["dusk", "dawn", "noon", "night"] * 10)) + "\n"


def test_tasks_sampled_kl_and_json(files, tmp_path):
    f32, q8, _ = files
    text = tmp_path / "verses.txt"
    text.write_text(VERSES)
    js = tmp_path / "e.json"
    out = run("eval", "-m", q8, "-f", text, "--base", f32, "--ctx", "64", "--tasks", "--task-items", "20",
              "--sampled", "4", "--prompt-len", "8", "--gen-len", "8", "--json", js).stdout
    assert "task next-word (4-way, chance 25%)" in out and "of 20 |" in out
    assert "task verse-ending" in out
    import json
    d = json.loads(js.read_text())
    for k in ("perplexity", "top1", "kl", "top1_agreement", "task_next_word", "task_verse_ending",
              "sampled_reverse_kl", "sampled_base_perplexity"):
        assert k in d, k
    assert 0 <= d["task_next_word"] <= 1 and 0 <= d["task_verse_ending"] <= 1
    assert 0 < d["sampled_reverse_kl"] < 0.05  # Q8_0 against its F32 original, on its own samples
    assert d["perplexity"] == pytest.approx(metric(out, "perplexity"), rel=1e-4)
    # against itself: zero, and the same items score the same
    self_js = tmp_path / "s.json"
    run("eval", "-m", q8, "-f", text, "--base", q8, "--ctx", "64", "--tasks", "--task-items", "20", "--sampled", "4",
        "--prompt-len", "8", "--gen-len", "8", "--json", self_js)
    s = json.loads(self_js.read_text())
    assert s["sampled_reverse_kl"] == 0.0
    assert s["task_next_word"] == d["task_next_word"] and s["task_verse_ending"] == d["task_verse_ending"]
    r = run("eval", "-m", q8, "-f", text, "--sampled", "4", check=False)
    assert r.returncode != 0 and "--base" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_kv_types(files):
    f32, _, text = files
    ppl = {kv: metric(run("eval", "-m", f32, "-f", text, "--ctx", "32", "--kv", kv).stdout, "perplexity")
           for kv in ["f32", "f16", "bf16"]}
    # bf16 K/V (8 significant bits) moves the perplexity a little, never much.
    assert ppl["bf16"] == pytest.approx(ppl["f32"], rel=0.02)
    assert ppl["f16"] == pytest.approx(ppl["f32"], rel=0.002)
    r = run("eval", "-m", f32, "-f", text, "--kv", "q4", check=False)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "--kv" in r.stderr

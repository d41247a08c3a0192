"""tests/python/test_llama_fixtures.py — squeeze against llama.cpp's answers on the real
models (SmolLM2-135M-Instruct Q4_1, Gemma 3 270M Q4_K_M), from fixtures that
scripts/make-llama-fixtures wrote once with a llama.cpp built outside the repository
(its build and commands are recorded in each fixture):

  - perplexity by the same method on the same text: within 0.5%;
  - the prompt's token ids: identical;
  - the top-20 logits at every prompt position, and the argmax wherever llama.cpp's
    top-2 gap is clear;
  - llama.cpp's greedy 64-token continuations, teacher-forced: squeeze's argmax at each
    step is llama.cpp's token wherever llama.cpp's gap is clear, and on ≥ 90% of steps.

Why "clear" and not exact: llama.cpp rounds every activation entering a quantized
product to 8 bits (Q8_0/Q8_1/Q8_K), at every batch size; squeeze does so only for
products over fewer than 16 rows (decode, short prompts) and is exact to ~1e-6 on
longer prefills (test_model_reference.py). Measured against a float64 forward of the
same file, llama.cpp's top-20 logits are 2.3-5.0% of the position's range off, and its
greedy token differs from the float64 argmax at gaps up to 0.74; squeeze's differ from
llama.cpp's exactly there. docs/real-models.md has the numbers.

Models are found in SQUEEZE_MODELS or build/models/ (scripts/get-models); without them,
or with a different file than the fixture's (SHA-256), the tests skip and say so."""
import hashlib
import json
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
MODELS = pathlib.Path(os.environ.get("SQUEEZE_MODELS", ROOT / "build/models"))
FIXTURES = ROOT / "tests/fixtures/llama"
NAMES = ["SmolLM2-135M-Instruct.Q4_1", "gemma-3-270m-q4_k_m"]
# A top-2 gap (logits) beyond llama.cpp's activation-rounding noise: the largest gap at
# which its greedy choice was measured to differ from the float64 argmax is 0.74.
CLEAR_GAP = 1.0
# Top-20 logits vs llama.cpp, relative to the position's largest |logit|: its own
# distance from the float64 forward is up to 5.0%, squeeze's from it up to 7.4%.
TOP_LOGITS_TOLERANCE = 0.1


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_checked = {}


def fixture(name):
    fx = json.loads((FIXTURES / f"expected-{name}.json").read_text(encoding="utf-8"))
    model = MODELS / f"{name}.gguf"
    if not model.exists():
        pytest.skip(f"{model} is absent (scripts/get-models fetches it, or set SQUEEZE_MODELS)")
    if name not in _checked:
        _checked[name] = sha256(model)
    if _checked[name] != fx["model_sha256"]:
        pytest.skip(f"{model} is not the file the fixture was made from (SHA-256 differs)")
    return fx, model


def run(*args, env=None):
    r = subprocess.run([SQ, *map(str, args)], capture_output=True, timeout=600,
                       env=None if env is None else {**os.environ, **env})
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r


def dump_prompt(model, text, tmp_path, tag):
    d = tmp_path / tag
    run("generate", "-m", model, "-p", text, "-n", "0", "--temp", "0", "--batch", "64", "--dump", d)
    return np.load(d / "tokens.npy").astype(np.int64).reshape(-1), np.load(d / "logits.npy")


@pytest.mark.parametrize("name", NAMES)
def test_perplexity_within_half_a_percent(name):
    fx, model = fixture(name)
    p = fx["perplexity"]
    text = pathlib.Path(p["text"])
    if not text.exists() or sha256(text) != p["text_sha256"]:
        pytest.skip(f"{text} is missing or differs from the fixture's (Debian base-files)")
    # The f32 product path (SQUEEZE_REPACK=0). On CPUs with the packed integer kernels the
    # default path rounds Q4_K/Q6_K activations to 8 bits, which moves this 512-position
    # sample's perplexity (standard error ~12%) by a few tenths of a percent either way; the
    # default path is held to the target on 4,080 positions by the next test.
    out = run("perplexity", "-m", model, "-f", text, "-c", p["ctx"], "--chunks", p["chunks"],
              env={"SQUEEZE_REPACK": "0"}).stdout.decode()
    ppl = float(re.search(r"Final estimate: PPL = ([0-9.]+)", out).group(1))
    assert abs(ppl / p["ppl"] - 1) <= 0.005, (ppl, p["ppl"])


@pytest.mark.parametrize("name", NAMES)
def test_default_path_perplexity_within_half_a_percent_on_4080_positions(name, tmp_path):
    """The default path (packed 8-bit-activation kernels where the CPU has them) against
    llama.cpp's perplexity on docs/real-models.md's text: 16 chunks of 512 tokens."""
    _, model = fixture(name)
    p = json.loads((FIXTURES / "perplexity-licenses.json").read_text(encoding="utf-8"))
    text = tmp_path / "licenses.txt"
    parts = [pathlib.Path(t) for t in p["texts"]]
    if not all(t.exists() for t in parts):
        pytest.skip("Debian's license texts are missing")
    text.write_bytes(b"".join(t.read_bytes() for t in parts))
    if sha256(text) != p["text_sha256"]:
        pytest.skip("the license texts differ from the fixture's (Debian base-files)")
    out = run("perplexity", "-m", model, "-f", text, "-c", p["ctx"], "--chunks", p["chunks"]).stdout.decode()
    ppl = float(re.search(r"Final estimate: PPL = ([0-9.]+)", out).group(1))
    assert abs(ppl / p["ppl"][name] - 1) <= 0.005, (ppl, p["ppl"][name])


@pytest.mark.parametrize("name", NAMES)
def test_prompt_tokens_and_top_logits(name, tmp_path):
    fx, model = fixture(name)
    clear = 0
    for k, p in enumerate(fx["prompts"]):
        tokens, logits = dump_prompt(model, p["text"], tmp_path, f"p{k}")
        assert tokens.tolist() == p["tokens"], p["text"]
        for i, top in enumerate(p["top_logits"]):
            ids = [t for t, _ in top]
            ref = np.array([v for _, v in top])
            row = logits[i].astype(np.float64)
            assert np.max(np.abs(row[ids] - ref)) <= TOP_LOGITS_TOLERANCE * np.max(np.abs(ref)), (p["text"], i)
            if ref[0] - ref[1] >= CLEAR_GAP:
                clear += 1
                assert int(np.argmax(row)) == ids[0], (p["text"], i)
    assert clear >= 20  # the argmax check is not vacuous


@pytest.mark.parametrize("name", NAMES)
def test_greedy_continuations_teacher_forced(name, tmp_path):
    fx, model = fixture(name)
    steps = agree = clear = 0
    for k, p in enumerate(fx["prompts"]):
        pieces = [bytes.fromhex(g["piece_hex"]) for g in p["greedy"]]
        text = (p["text"].encode() + b"".join(pieces)).decode("utf-8")
        tokens, logits = dump_prompt(model, text, tmp_path, f"g{k}")
        want = p["tokens"] + [g["id"] for g in p["greedy"]]
        # Re-tokenizing prompt + continuation may merge across the seam (BPE): compare the
        # steps up to the first token that differs.
        n = 0
        while n < min(len(tokens), len(want)) and tokens[n] == want[n]:
            n += 1
        n0 = len(p["tokens"])
        for j, g in enumerate(p["greedy"]):
            if n0 + j > n:
                break
            ours = int(np.argmax(logits[n0 - 1 + j]))
            steps += 1
            agree += ours == g["id"]
            if g["gap"] >= CLEAR_GAP:
                clear += 1
                assert ours == g["id"], (p["text"], j, g)
    assert steps >= 300, steps
    assert agree >= 0.9 * steps, (agree, steps)
    assert clear >= 100

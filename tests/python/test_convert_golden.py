"""tests/python/test_convert_golden.py — squeeze against the reference implementations in
transformers 5.25 (Muse Glimmer's `MuseGlimmerForConditionalGeneration`, and
`LlamaForCausalLM`, `Gemma3ForCausalLM`, the Qwen2/Qwen3/Qwen3-MoE classes, `GptOssForCausalLM`) on the tiny random checkpoints in
tests/fixtures/muse_glimmer/ and tests/fixtures/hf_tiny/ (made by
scripts/make-muse-glimmer-fixtures; README in muse_glimmer/): each checkpoint is converted
with `squeeze convert`, its recorded prompt run through squeeze's forward pass, and every
position's logits compared with the reference's: max |Δ| / max |reference| per position.

Bounds: F32, F16 and BF16 files (the fixtures' weights are bf16 values) with f32 KV, 1e-4
(the issue's bar; f32 arithmetic on both sides, measured ≤ 1e-5). A Q8_0 file changes the
weights themselves, so it is judged against how far the reference moves under the same
size of weight rounding (see the test; measured values in docs/muse-glimmer.md).
"""
import glob
import json
import os
import subprocess

import numpy as np
import pytest

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MUSE_CASES = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(ROOT, "tests", "fixtures", "muse_glimmer", "*", "logits.npy")))
CASES = MUSE_CASES + sorted(os.path.dirname(p) for p in glob.glob(os.path.join(ROOT, "tests", "fixtures", "hf_tiny", "*", "logits.npy")))


def run(*args):
    r = subprocess.run([SQ, *args], capture_output=True, text=True, errors="replace", timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def squeeze_logits(case, tmp_path, gguf_type, batch=7):
    out = str(tmp_path / f"{os.path.basename(case)}.{gguf_type}.gguf")
    run("convert", case, out, "--type", gguf_type, "--quiet")
    tokens = np.load(os.path.join(case, "tokens.npy")).astype(np.int64).reshape(-1)
    dump = str(tmp_path / f"dump_{gguf_type}")
    # Prefill in chunks of 7: local rings wrap inside a chunk as well as between chunks.
    run("generate", "-m", out, "--tokens", ",".join(map(str, tokens)), "-n", "0", "--kv", "f32",
        "--batch", str(batch), "--dump", dump)
    return np.load(os.path.join(dump, "logits.npy")).reshape(len(tokens), -1), tokens


def relative_errors(ours, ref):
    return np.max(np.abs(ours - ref), axis=1) / np.max(np.abs(ref), axis=1)


def test_fixtures_present():
    names = {os.path.basename(c) for c in CASES}
    assert {"tiny", "tiny-gqa4", "wide", "llama", "gemma3", "llama3-tied", "llama-linear", "qwen2", "qwen3",
            "qwen3-tied", "qwen3moe", "qwen3moe-nonorm", "gpt-oss", "gpt-oss-mxfp4"} <= names, names


@pytest.mark.parametrize("case", CASES, ids=[os.path.basename(c) for c in CASES])
def test_f32_matches_reference(case, tmp_path):
    ref = np.load(os.path.join(case, "logits.npy")).astype(np.float64)
    ours, tokens = squeeze_logits(case, tmp_path, "F32")
    assert ours.shape == ref.shape
    err = relative_errors(ours, ref)
    assert err.max() <= 1e-4, f"worst position {err.argmax()}: {err.max():.3g}"
    # the same logits whatever the prefill chunking (one token at a time: GEMV paths)
    ours1, _ = squeeze_logits(case, tmp_path, "F32", batch=1)
    assert relative_errors(ours1, ref).max() <= 1e-4
    assert (ours.argmax(axis=1) == ref.argmax(axis=1)).mean() >= 0.95


@pytest.mark.parametrize("case", CASES, ids=[os.path.basename(c) for c in CASES])
def test_16_bit_files_match_reference(case, tmp_path):
    # The fixtures' weights are bf16 values: F16 and BF16 files hold them (nearly) exactly.
    ref = np.load(os.path.join(case, "logits.npy")).astype(np.float64)
    for gguf_type in ("F16", "BF16"):
        ours, _ = squeeze_logits(case, tmp_path, gguf_type)
        assert relative_errors(ours, ref).max() <= 1e-4, gguf_type


@pytest.mark.parametrize("case", MUSE_CASES, ids=[os.path.basename(c) for c in MUSE_CASES])
def test_q8_0_moves_as_the_reference_does_under_q8_0_noise(case, tmp_path):
    # Random tiny models amplify any weight perturbation (sharp QK-normed attention,
    # post-norms): the reference itself moves by `reference_under_q8_noise` when its
    # matrices get Q8_0-sized rounding noise (cases.json, scripts/make-muse-glimmer-fixtures).
    # squeeze's Q8_0 file rounds the weights that much and its dot products also round the
    # activations to 8 bits, so it may move up to twice as far, not more.
    with open(os.path.join(os.path.dirname(case), "cases.json")) as f:
        sens = {c["case"]: c["reference_under_q8_noise"] for c in json.load(f)["cases"]}[os.path.basename(case)]
    ref = np.load(os.path.join(case, "logits.npy")).astype(np.float64)
    ours, _ = squeeze_logits(case, tmp_path, "Q8_0")
    err = relative_errors(ours, ref)
    assert np.median(err) <= 2 * sens["median"], (np.median(err), sens)
    assert err.max() <= 2 * sens["max"], (err.max(), sens)


@pytest.mark.parametrize("case", CASES, ids=[os.path.basename(c) for c in CASES])
def test_tokenizer_matches(case, tmp_path):
    prompt_path = os.path.join(case, "prompt.txt")
    if not os.path.exists(prompt_path):
        pytest.skip("no prompt.txt in the fixture")
    out = str(tmp_path / "tok.gguf")
    run("convert", case, out, "--type", "F32", "--quiet")
    tokens = np.load(os.path.join(case, "tokens.npy")).astype(np.int64).reshape(-1).tolist()
    got = run("tokenize", "-m", out, "--ids", "-f", prompt_path).stdout.split()
    assert [int(x) for x in got] == tokens


MXFP4_CASES = [c for c in CASES if os.path.basename(c).endswith("mxfp4")]


@pytest.mark.parametrize("case", MXFP4_CASES, ids=[os.path.basename(c) for c in MXFP4_CASES])
def test_mxfp4_experts_pass_through_bit_exact(case, tmp_path):
    """OpenAI's MXFP4 expert blocks go into the GGUF as MXFP4 (re-nibbled, not requantized): gguf-py's
    own MXFP4 decoder gives back exactly the values of the F32 conversion, every expert element. The
    file then runs with MXFP4 × Q8_0 dots (as llama.cpp's do): rounding the activations to 8 bits
    flips near-tied routing on a few positions of this tiny random model, so it is held to the
    reference loosely (measured: median 0.02, top-1 agreement 0.95)."""
    import gguf
    f32, mx = str(tmp_path / "f32.gguf"), str(tmp_path / "auto.gguf")
    run("convert", case, f32, "--type", "F32", "--quiet")
    run("convert", case, mx, "--quiet")
    want = {t.name: np.asarray(t.data) for t in gguf.GGUFReader(f32).tensors}
    experts = 0
    for t in gguf.GGUFReader(mx).tensors:
        if t.name.endswith("_exps.weight"):
            assert t.tensor_type == gguf.GGMLQuantizationType.MXFP4, t.name
            got = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
            assert np.array_equal(got.reshape(want[t.name].shape), want[t.name]), t.name
            experts += 1
    assert experts == 12
    ref = np.load(os.path.join(case, "logits.npy")).astype(np.float64)
    tokens = np.load(os.path.join(case, "tokens.npy")).astype(np.int64).reshape(-1)
    dump = str(tmp_path / "dump")
    run("generate", "-m", mx, "--tokens", ",".join(map(str, tokens)), "-n", "0", "--kv", "f32", "--batch", "7",
        "--dump", dump)
    ours = np.load(os.path.join(dump, "logits.npy")).reshape(len(tokens), -1)
    err = relative_errors(ours, ref)
    assert np.median(err) <= 0.05, np.median(err)
    assert (ours.argmax(axis=1) == ref.argmax(axis=1)).mean() >= 0.9

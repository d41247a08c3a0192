"""tests/python/test_quantize_cli.py — `squeeze quantize` and `squeeze imatrix` end to end:
every preset and a dynamic plan on a small random-weight model, outputs read back by our
inspect and by gguf-py (whose dequantization also checks the reported errors), preset
rules re-derived here independently, dry runs that agree with real runs, the 1b preset's
Q4_K_M size, and one-line errors."""
import json
import os
import subprocess

import numpy as np
import pytest
from gguf import GGUFReader
from gguf.quants import dequantize

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
# glimmer-tiny widened so every row fits a 256-block: q_dim 256, kv_dim 128, n_ff 512.
SHAPE = ["--config", "glimmer-tiny", "--layers", "4", "--embd", "256", "--heads", "4",
         "--head-dim", "64", "--ff", "512", "--vocab", "512"]
PRESETS = ["Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q4_K_M", "Q4_K_S", "Q5_1", "Q5_0", "Q4_1", "Q4_0", "F16", "BF16"]


def run(*args, check=True):
    r = subprocess.run([SQ, *args], capture_output=True, text=True, errors="replace", timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("quantize")
    model = str(d / "model.gguf")
    run("make-model", *SHAPE, "-o", model)
    return d, model


def more_bits(i, n):  # llama.cpp's use_more_bits
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def expected_type(preset, name, n_dims, n_layer=4):
    """The preset rules, written out again (tied output: token_embd is the head)."""
    if n_dims < 2 or "_norm" in name:
        return "F32"
    base = {"Q4_K_M": "Q4_K", "Q4_K_S": "Q4_K", "Q5_K_M": "Q5_K", "Q5_K_S": "Q5_K"}.get(preset, preset)
    if name == "token_embd.weight":
        return base if preset in ("Q8_0", "F16", "BF16") else "Q6_K"
    if preset in ("Q4_K_M", "Q5_K_M") and (name.endswith("attn_v.weight") or name.endswith("ffn_down.weight")):
        if more_bits(int(name.split(".")[1]), n_layer):
            return "Q6_K"
    return base


def report(path):
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def quantized(work):
    d, model = work
    out = {}
    for preset in PRESETS:
        path, rep = str(d / f"{preset}.gguf"), str(d / f"{preset}.json")
        r = run("quantize", model, path, preset, "--report", rep)
        out[preset] = (path, report(rep), r.stdout)
    return out


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_loads_and_follows_the_rules(work, quantized, preset):
    d, model = work
    path, rep, stdout = quantized[preset]
    assert "bits per weight" in stdout and "GiB" in stdout
    info = json.loads(run("inspect", "--json", path).stdout)
    assert len(info["tensors"]) == len(rep["tensors"])
    reader = GGUFReader(path)
    source = {t.name: np.array(t.data) for t in GGUFReader(model).tensors}
    assert int(reader.fields["general.quantization_version"].contents()) == 2
    total = 0
    for t, planned in zip(reader.tensors, rep["tensors"]):
        n_dims = len(t.shape)
        assert t.name == planned["name"]
        assert t.tensor_type.name == expected_type(preset, t.name, n_dims), t.name
        total += int(t.n_bytes)
        if n_dims == 2:
            # gguf-py's dequantization of our bytes reproduces the error we report.
            ref = source[t.name].astype(np.float64)
            got = dequantize(t.data, t.tensor_type).reshape(ref.shape).astype(np.float64)
            rel = np.sqrt(((got - ref) ** 2).sum() / (ref ** 2).sum())
            assert rel == pytest.approx(planned["error"], rel=1e-4, abs=1e-7), t.name
    assert total == rep["tensor_bytes"]
    assert rep["bpw"] == pytest.approx(8 * total / rep["n_elements"])


def test_generate_runs_on_quantized_models(quantized):
    for preset in ("Q4_K_M", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "BF16"):
        r = run("generate", "-m", quantized[preset][0], "-p", "the quick", "-n", "4", "--temp", "0")
        assert "prompt:" in r.stderr


def test_dry_run_agrees_with_the_real_run(work, quantized):
    d, model = work
    for preset in ("Q4_K_M", "Q5_K_M"):
        real = quantized[preset][1]
        rep_file, rep_cfg = str(d / "dry_file.json"), str(d / "dry_cfg.json")
        run("quantize", "--dry-run", model, preset, "--report", rep_file)
        run("quantize", "--dry-run", *SHAPE, preset, "--report", rep_cfg)
        for dry in (report(rep_file), report(rep_cfg)):
            assert [(t["name"], t["type"], t["bytes"]) for t in dry["tensors"]] == \
                   [(t["name"], t["type"], t["bytes"]) for t in real["tensors"]]
            assert dry["tensor_bytes"] == real["tensor_bytes"]
    assert not (d / "dry_file.gguf").exists()


def test_glimmer_1b_q4_k_m_dry_run_is_within_4_5_and_5_0_bpw(tmp_path):
    rep = str(tmp_path / "r.json")
    r = run("quantize", "--dry-run", "--config", "glimmer-1b", "Q4_K_M", "--report", rep)
    bpw = report(rep)["bpw"]
    assert 4.5 <= bpw <= 5.0
    assert f"{bpw:.4f} bits per weight" in r.stdout


@pytest.mark.parametrize("target", ["5.3", "4.6"])
def test_dynamic_plan_lands_within_2_percent(work, target):
    d, model = work
    out, rep = str(d / f"dyn{target}.gguf"), str(d / f"dyn{target}.json")
    # --sample bounds the measurement to 64 rows per tensor: seconds, and the sampled path.
    r = run("quantize", "--dynamic", "--target-bpw", target, "--sample", "16384", model, out, "--report", rep)
    got = report(rep)
    assert abs(got["bpw"] - float(target)) <= 0.02 * float(target)
    assert "measured 29 tensors on evenly spaced rows" in r.stdout
    reader = GGUFReader(out)
    assert sum(int(t.n_bytes) for t in reader.tensors) == got["tensor_bytes"]
    types = {t.tensor_type.name for t in reader.tensors if len(t.shape) == 2}
    assert types <= {"Q4_K", "Q5_K", "Q6_K", "Q8_0", "F16"}
    json.loads(run("inspect", "--json", out).stdout)
    run("generate", "-m", out, "-p", "hello", "-n", "4", "--temp", "0")
    assert "bits per weight" in r.stdout


def test_dynamic_beats_q4_k_m_at_its_size(work, quantized):
    d, model = work
    q4km = quantized["Q4_K_M"][1]
    rep = str(d / "dyn_q4km.json")
    run("quantize", "--dynamic", "--target-bpw", str(q4km["bpw"]), "--sample", "32768", model, str(d / "dyn_q4km.gguf"),
        "--report", rep)
    dyn = report(rep)
    assert dyn["tensor_bytes"] <= q4km["tensor_bytes"]
    assert dyn["rms_error"] < q4km["rms_error"]


def test_imatrix_collect_and_use(work, tmp_path):
    d, model = work
    text = tmp_path / "calib.txt"
    text.write_text(" ".join(["the quick brown fox jumps over the lazy dog"] * 200))
    im = str(tmp_path / "im.gguf")
    r = run("imatrix", "-m", model, "-f", str(text), "-o", im, "--chunk", "64", "--chunks", "3")
    assert "perplexity" in r.stdout
    reader = GGUFReader(im)
    assert reader.fields["general.type"].contents() == "imatrix"
    assert int(reader.fields["imatrix.chunk_count"].contents()) == 3
    tensors = {t.name: np.array(t.data) for t in reader.tensors}
    assert len(tensors) == 2 * (4 * 7 + 1)
    assert float(tensors["blk.3.ffn_down.weight.counts"].ravel()[0]) == 3 * 64
    assert tensors["blk.3.ffn_down.weight.in_sum2"].size == 512
    assert (tensors["token_embd.weight.in_sum2"] > 0).all()  # tied head: collected
    out = str(tmp_path / "q.gguf")
    run("quantize", "--imatrix", im, model, out, "Q4_K_M")
    assert GGUFReader(out).fields["quantize.imatrix.file"].contents() == im
    merged = str(tmp_path / "merged.gguf")
    run("imatrix", "--merge", im, "--merge", im, "-o", merged)
    assert int(GGUFReader(merged).fields["imatrix.chunk_count"].contents()) == 6


def test_overrides_and_fallbacks(tmp_path):
    model = str(tmp_path / "odd.gguf")
    run("make-model", "--config", "glimmer-tiny", "--layers", "2", "--embd", "256", "--ff", "512", "-o", model)
    rep = str(tmp_path / "r.json")
    r = run("quantize", model, str(tmp_path / "o.gguf"), "Q4_K_M", "--report", rep,
            "--tensor-type", "ffn_up=Q8_0", "--output-tensor-type", "Q5_K")
    types = {t["name"]: (t["type"], t["note"]) for t in report(rep)["tensors"]}
    assert types["blk.0.ffn_up.weight"][0] == "Q8_0"
    assert types["token_embd.weight"][0] == "Q5_K"
    # glimmer-tiny's q_dim is 64: attn_output rows fit no K-quant → Q8_0, said so.
    assert types["blk.0.attn_output.weight"][0] == "Q8_0"
    assert "row 64" in types["blk.0.attn_output.weight"][1]
    assert "row 64" in r.stdout


def test_requantize_is_refused_unless_allowed(quantized, tmp_path):
    q8 = quantized["Q8_0"][0]
    r = run("quantize", q8, str(tmp_path / "x.gguf"), "Q4_K_M", check=False)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
    assert "--allow-requantize" in r.stderr
    r = run("quantize", "--allow-requantize", q8, str(tmp_path / "x.gguf"), "Q4_K_M")
    assert "warning: requantizing" in r.stderr


def one_line_error(*args):
    r = run(*args, check=False)
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr


def test_errors_are_one_line(work, tmp_path):
    d, model = work
    before = open(model, "rb").read()
    assert "refusing to overwrite" in one_line_error("quantize", model, model, "Q4_K_M")
    assert open(model, "rb").read() == before
    assert "Q9_X" in one_line_error("quantize", model, str(tmp_path / "o.gguf"), "Q9_X")
    assert "missing.gguf" in one_line_error("quantize", str(tmp_path / "missing.gguf"), str(tmp_path / "o.gguf"), "Q8_0")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all" * 10)
    one_line_error("quantize", str(junk), str(tmp_path / "o.gguf"), "Q8_0")
    assert "--target-bpw" in one_line_error("quantize", "--dynamic", model, str(tmp_path / "o.gguf"))
    assert "below the smallest" in one_line_error("quantize", "--dynamic", "--target-bpw", "2", model, str(tmp_path / "o.gguf"))
    one_line_error("imatrix", "-m", model, "-o", str(tmp_path / "im.gguf"))
    assert not (tmp_path / "o.gguf").exists()

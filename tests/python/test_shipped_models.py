"""tests/python/test_shipped_models.py — the models shipped in models/ (scripts/train-models):
shapes as documented (the student glimmer-shaped, about a third of the teacher), both
generate text, and `squeeze eval` on the KJV test split reproduces the perplexities
recorded in models/expected-eval.json by scripts/distill-report."""
import json
import os
import pathlib
import subprocess

import pytest
from gguf import GGUFReader

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
DATA = pathlib.Path(os.environ.get("SQUEEZE_DATA", ROOT / "build/data/kjv"))
STUDENT = ROOT / "models/glimmer-kjv.f16.gguf"
TEACHER = ROOT / "models/kjv-teacher.q8_0.gguf"


def run(*args):
    r = subprocess.run([SQ, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


def meta(path):
    r = GGUFReader(str(path))
    out = {}
    for k, f in r.fields.items():
        if f.types and f.types[0].name in ("UINT32", "INT32", "FLOAT32", "UINT64"):
            out[k] = f.parts[f.data[0]][0].item()
        elif f.types and f.types[0].name == "STRING":
            out[k] = bytes(f.parts[f.data[0]]).decode()
        elif f.types and f.types[0].name == "ARRAY" and len(f.data) < 64:
            out[k] = [f.parts[i][0].item() for i in f.data]
    params = sum(int(t.n_elements) for t in r.tensors)
    return out, params


def test_shapes_and_sizes():
    s, s_params = meta(STUDENT)
    t, t_params = meta(TEACHER)
    assert s["general.architecture"] == "glimmer"
    n_layer = s["glimmer.block_count"]
    assert n_layer % 4 == 0
    heads, kv = s["glimmer.attention.head_count"], s["glimmer.attention.head_count_kv"]
    assert kv * 4 <= heads
    assert s["glimmer.attention.sliding_window"] * 2 <= s["glimmer.context_length"]
    assert 0.25 <= s_params / t_params <= 0.45
    assert STUDENT.stat().st_size + TEACHER.stat().st_size < 40 * 2**20


@pytest.mark.parametrize("model", [STUDENT, TEACHER], ids=["student", "teacher"])
def test_generates_text(model):
    out = run("generate", "-m", model, "-p", "And God said unto Moses,", "-n", 24, "--temp", 0)
    words = out.split()
    assert len(words) >= 8
    assert sum(w.strip(",.;:").isalpha() for w in words) >= 0.7 * len(words), out


@pytest.mark.skipif(not (DATA / "test.txt").exists(), reason="scripts/prepare-corpus not run")
def test_eval_reproduces_recorded_perplexity(tmp_path):
    expected = json.loads((ROOT / "models/expected-eval.json").read_text())
    for name, model in (("glimmer-kjv", STUDENT), ("kjv-teacher", TEACHER)):
        js = tmp_path / f"{name}.json"
        run("eval", "-m", model, "-f", DATA / "test.txt", "--ctx", 256, "--chunks", 8, "--json", js)
        got = json.loads(js.read_text())
        assert got["perplexity"] == pytest.approx(expected[name]["perplexity"], rel=1e-3), name
        assert got["top1"] == pytest.approx(expected[name]["top1"], abs=2e-3), name

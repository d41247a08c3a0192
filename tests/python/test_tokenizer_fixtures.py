"""tests/python/test_tokenizer_fixtures.py — `squeeze tokenize -m` on the real GGUF
models against the committed llama.cpp fixtures (tests/fixtures/tokenizer/, written by
scripts/make-tokenizer-fixtures): identical token ids for every text, byte-level BPE
(SmolLM2, pre-tokenizer smollm) and SentencePiece (Gemma 3).

The models live outside git (scripts/get-models puts them in build/models/, or set
SQUEEZE_MODELS); without them the test skips with a message.
"""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
FIXTURES = ROOT / "tests/fixtures/tokenizer"
MODELS = pathlib.Path(os.environ.get("SQUEEZE_MODELS", ROOT / "build/models"))
EXPECTED = sorted(FIXTURES.glob("expected-*.json"))

# llama-tokenize flags → squeeze tokenize flags.
FLAGS = {"--no-parse-special": "--no-parse-special", "--no-bos": "--no-add-special"}


def case_bytes():
    texts = json.loads((FIXTURES / "texts.json").read_text(encoding="utf-8"))["texts"]
    bad = json.loads((FIXTURES / "invalid_utf8.json").read_text(encoding="utf-8"))["texts"]
    out = {name: t.encode("utf-8") for name, t in texts.items()}
    out.update({"invalid_utf8/" + k: bytes.fromhex(v) for k, v in bad.items()})
    return out


def test_fixtures_exist():
    assert EXPECTED, "no expected-*.json: run scripts/make-tokenizer-fixtures"


@pytest.mark.parametrize("fixture", EXPECTED, ids=lambda p: p.stem)
def test_ids_match_llama_cpp(fixture):
    data = json.loads(fixture.read_text(encoding="utf-8"))
    model = MODELS / data["model"]
    if not model.is_file():
        pytest.skip(f"{model} is absent (scripts/get-models fetches it, or set SQUEEZE_MODELS)")
    texts = case_bytes()
    # One --batch run per flag combination: hex text lines in, id lines out.
    groups = {}
    for name, case in data["cases"].items():
        groups.setdefault(tuple(case["args"]), []).append(name)
    mismatches = []
    for args, names in groups.items():
        inputs = [texts[n.split("/no_")[0] if "/no_" in n else n] for n in names]
        cmd = [SQ, "tokenize", "-m", str(model), "--batch", *[FLAGS[a] for a in args]]
        r = subprocess.run(cmd, input="".join(t.hex() + "\n" for t in inputs), capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.split("\n")[: len(names)]
        for name, line in zip(names, lines):
            got = [int(x) for x in line.split()]
            want = data["cases"][name]["ids"]
            if got != want:
                mismatches.append(f"{name}: squeeze {got[:40]} vs llama.cpp {want[:40]}")
    assert not mismatches, f"{len(mismatches)} of {len(data['cases'])} cases differ:\n" + "\n".join(mismatches)


def test_cli_prints_ids_and_pieces():
    model = MODELS / "gemma-3-270m-q4_k_m.gguf"
    if not model.is_file():
        pytest.skip(f"{model} is absent")
    ids = subprocess.run([SQ, "tokenize", "-m", str(model), "-p", "Hello world", "--ids"],
                         capture_output=True, text=True, check=True).stdout.split()
    pieces = subprocess.run([SQ, "tokenize", "-m", str(model), "-p", "Hello world", "--pieces"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert [p.split("\t")[0] for p in pieces] == ids
    assert pieces[0].split("\t")[1] == "<bos>"
    nobos = subprocess.run([SQ, "tokenize", "-m", str(model), "-p", "Hello world", "--no-bos"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert nobos == ids[1:]
    r = subprocess.run([SQ, "tokenize", "-m", str(model), "--decode", "-p", " ".join(ids), "--no-render-control"],
                       capture_output=True, text=True, check=True)
    assert r.stdout == "Hello world"


def test_missing_or_bad_model_is_one_line_error(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf")
    for path in (tmp_path / "missing.gguf", bad):
        r = subprocess.run([SQ, "tokenize", "-m", str(path), "-p", "x"], capture_output=True, text=True)
        assert r.returncode != 0
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr

"""tests/python/test_train_drafter_cli.py — `squeeze train-drafter` end to end on a tiny
target: the drafter it writes loads and drafts (output equal to plain decoding), the loss
CSV has every step and validation rows, the stored data is reused, a checkpoint resumes
to the same weights as an uninterrupted run, and bad input is a one-line error."""
import os
import subprocess

import numpy as np
import pytest
from gguf import GGUFReader

BIN = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
PROMPTS = ["The keeper climbed the stairs", "Ships passed in the night", "The lamp was lit at dusk",
           "In the winter the wind came", "The children asked him questions", "Why does the light turn",
           "He counted the steps one by one", "The morning after a long storm"]


def squeeze(*args):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=300)


def weights(path):
    return {t.name: np.array(t.data) for t in GGUFReader(str(path)).tensors if not t.name.startswith("optim.")}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("drafter")
    target = d / "t.gguf"
    r = squeeze("make-model", "--config", "muse-glimmer-tiny", "--type", "Q8_0", "--seed", "4", "-o", target)
    assert r.returncode == 0, r.stderr
    prompts = d / "p.txt"
    prompts.write_text("\n".join(PROMPTS) + "\n")
    return d, target, prompts


def train(setup, out, *extra, data="data"):
    d, target, prompts = setup
    return squeeze("train-drafter", "--target", target, "--prompts", prompts, "--data", d / data, "-o", out,
                   "--layers", 2, "--block", 4, "--anchors", 4, "--gen-tokens", 12, "--val", 2, "--steps", 6,
                   "--val-every", 3, "--no-progress", "-t", 1, *extra)


def test_trains_a_drafter_that_drafts(setup, tmp_path):
    d, target, _ = setup
    out, csv = tmp_path / "d.gguf", tmp_path / "loss.csv"
    r = train(setup, out, "--loss-csv", csv, "--plot", tmp_path / "loss.png")
    assert r.returncode == 0, r.stderr
    assert "validation loss" in r.stderr and "tau" in r.stderr
    rows = csv.read_text().splitlines()
    assert rows[0] == "step,loss,lr,val_loss,val_tau,seconds" and len(rows) == 7
    assert rows[3].split(",")[4] != "" and rows[6].split(",")[4] != ""  # validated at steps 3 and 6
    assert (tmp_path / "loss.png").read_bytes()[:4] == b"\x89PNG"
    assert len(list((d / "data").glob("sample_*.sqdd"))) == len(PROMPTS)
    plain = squeeze("generate", "-m", target, "-p", "The keeper", "-n", 24, "--temp", 0, "--ignore-eos")
    spec = squeeze("generate", "-m", target, "-p", "The keeper", "-n", 24, "--temp", 0, "--ignore-eos", "--draft", out,
                   "--draft-fixed")
    assert plain.returncode == 0 and spec.returncode == 0, spec.stderr
    assert spec.stdout == plain.stdout
    assert "speculative (dflash)" in spec.stderr


def test_data_is_reused(setup, tmp_path):
    d, _, _ = setup
    assert train(setup, tmp_path / "a.gguf").returncode == 0
    stamps = {p.name: p.stat().st_mtime_ns for p in (d / "data").glob("*.sqdd")}
    assert train(setup, tmp_path / "b.gguf").returncode == 0
    assert stamps == {p.name: p.stat().st_mtime_ns for p in (d / "data").glob("*.sqdd")}


def test_resume_matches_straight_run(setup, tmp_path):
    straight, resumed, ckpt = tmp_path / "a.gguf", tmp_path / "b.gguf", tmp_path / "c.gguf"
    assert train(setup, straight).returncode == 0
    r = train(setup, tmp_path / "unused.gguf", "--checkpoint", ckpt, "--stop-after", 3)
    assert r.returncode == 0, r.stderr
    r = train(setup, resumed, "--checkpoint", ckpt, "--resume", ckpt)
    assert r.returncode == 0, r.stderr
    a, b, mid = weights(straight), weights(resumed), weights(tmp_path / "unused.gguf")
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    assert any(not np.array_equal(a[k], mid[k]) for k in a)


def test_bad_input(setup, tmp_path):
    d, target, prompts = setup
    few = tmp_path / "few.txt"
    few.write_text("one\ntwo\n")
    r = squeeze("train-drafter", "--target", target, "--prompts", few, "--data", tmp_path / "x", "-o", tmp_path / "o.gguf",
                "--val", 2)
    assert r.returncode != 0 and "need more than the 2 held out" in r.stderr
    # data stored for another drafter's taps (3 layers tap other target layers)
    r = train(setup, tmp_path / "o.gguf", "--layers", 3)
    assert r.returncode != 0 and "tapped values" in r.stderr
    r = squeeze("train-drafter", "--target", target, "--prompts", prompts, "--data", tmp_path / "y", "-o", tmp_path / "o.gguf",
                "--type", "Q4_K")
    assert r.returncode != 0 and "--type must be" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1

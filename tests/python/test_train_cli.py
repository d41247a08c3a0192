"""tests/python/test_train_cli.py — `squeeze train` end to end on a tiny run: the output
loads and generates, a checkpoint resumes to the same weights as an uninterrupted run,
and bad input is a one-line error."""
import os
import subprocess

import numpy as np
from gguf import GGUFReader

BIN = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
TEXT = ("The lamp was lit at dusk and the keeper watched the sea until the morning came. "
        "Ships passed by the rocks and the light showed them the way to the harbour. ") * 40


def squeeze(*args):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=300)


def weights(path):
    return {t.name: np.array(t.data) for t in GGUFReader(str(path)).tensors if not t.name.startswith("optim.")}


def train(tmp_path, out, *extra):
    data = tmp_path / "data.txt"
    data.write_text(TEXT)
    return squeeze("train", "--config", "glimmer-tiny", "--data", data, "--steps", 4, "--out", out,
                   "--batch", 2, "--seq-len", 16, "--no-progress", "-t", 1, *extra)


def test_train_output_generates(tmp_path):
    out = tmp_path / "m.gguf"
    r = train(tmp_path, out, "--loss-csv", tmp_path / "loss.csv", "--plot", tmp_path / "loss.png")
    assert r.returncode == 0, r.stderr
    assert "validation loss" in r.stdout
    assert len((tmp_path / "loss.csv").read_text().splitlines()) == 5
    png = (tmp_path / "loss.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert int.from_bytes(png[16:20], "big") == 900 and int.from_bytes(png[20:24], "big") == 520
    g = squeeze("generate", "-m", out, "-p", "The lamp", "-n", 4, "--temp", 0)
    assert g.returncode == 0, g.stderr


def test_resume_matches_straight_run(tmp_path):
    straight, resumed, ckpt = tmp_path / "a.gguf", tmp_path / "b.gguf", tmp_path / "ckpt.gguf"
    assert train(tmp_path, straight).returncode == 0
    r = train(tmp_path, tmp_path / "unused.gguf", "--checkpoint", ckpt, "--stop-after", 2)  # interrupted
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "unused.gguf").exists()
    r = train(tmp_path, resumed, "--resume", ckpt)
    assert r.returncode == 0, r.stderr
    a, b = weights(straight), weights(resumed)
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    # and the interrupted state differs from the final one (the resume did train)
    mid = weights(ckpt)
    assert any(not np.array_equal(a[k], mid[k]) for k in a)


def test_bad_input_is_one_line_error(tmp_path):
    for args in (["--data", tmp_path / "missing.txt", "--out", tmp_path / "x.gguf"],
                 ["--data", __file__, "--out", tmp_path / "x.gguf", "--steps", 0],
                 ["--data", __file__, "--out", tmp_path / "x.gguf", "--config", "nope"],
                 ["--data", __file__, "--out", tmp_path / "x.gguf", "--plot", tmp_path / "no" / "p.png"]):
        r = squeeze("train", *args)
        assert r.returncode == 1
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_distill_from_a_trained_teacher(tmp_path):
    teacher, student = tmp_path / "t.gguf", tmp_path / "s.gguf"
    assert train(tmp_path, teacher).returncode == 0
    for extra in ([], ["--topk", 8, "--loss", "reverse-kl"]):
        r = squeeze("distill", "--teacher", teacher, "--config", "glimmer-tiny", "--data", tmp_path / "data.txt",
                    "--steps", 3, "--out", student, "--batch", 2, "--seq-len", 16, "--no-progress", "-t", 1, *extra)
        assert r.returncode == 0, r.stderr
        g = squeeze("generate", "-m", student, "-p", "The lamp", "-n", 3, "--temp", 0)
        assert g.returncode == 0, g.stderr
    r = squeeze("distill", "--teacher", teacher, "--data", tmp_path / "data.txt", "--out", student, "--loss", "jsd")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_muse_glimmer_train_and_distill(tmp_path):
    """The muse-glimmer architecture by built-in config (train) and by --arch on another
    shape (distill from a glimmer teacher): each output is a muse-glimmer file that loads
    and generates."""
    def arch_and_tensors(path):
        r = GGUFReader(str(path))
        arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
        return arch, {t.name for t in r.tensors}

    model = tmp_path / "mg.gguf"
    data = tmp_path / "data.txt"
    data.write_text(TEXT)
    r = squeeze("train", "--config", "muse-glimmer-tiny", "--data", data, "--steps", 3, "--out", model,
                "--batch", 2, "--seq-len", 24, "--no-progress", "-t", 1)
    assert r.returncode == 0, r.stderr
    arch, names = arch_and_tensors(model)
    assert arch == "muse-glimmer"
    assert {"blk.0.attn_gate.weight", "blk.0.attn_q_norm.weight", "blk.0.post_ffw_norm.weight", "output.weight"} <= names
    teacher, student = tmp_path / "t.gguf", tmp_path / "s.gguf"
    assert train(tmp_path, teacher).returncode == 0
    r = squeeze("distill", "--teacher", teacher, "--config", "glimmer-tiny", "--arch", "muse-glimmer", "--data", data,
                "--steps", 2, "--out", student, "--batch", 2, "--seq-len", 16, "--no-progress", "-t", 1)
    assert r.returncode == 0, r.stderr
    assert arch_and_tensors(student)[0] == "muse-glimmer"
    for m in (model, student):
        g = squeeze("generate", "-m", m, "-p", "The lamp", "-n", 4, "--temp", 0)
        assert g.returncode == 0, g.stderr


def test_muse_glimmer_specials_and_chat_template(tmp_path):
    """--specials muse-glimmer renames the vocabulary's eight specials by role (ids kept, so
    distillation from a teacher with the old names is unchanged) and appends <|patch|> to
    the exported model; --chat-template stores the template. Bad values fail with one line
    before any training."""
    data = tmp_path / "data.txt"
    data.write_text(TEXT)
    teacher, student, onp = tmp_path / "t.gguf", tmp_path / "s.gguf", tmp_path / "o.gguf"
    assert train(tmp_path, teacher).returncode == 0
    tmpl = tmp_path / "t.jinja"
    tmpl.write_text("{% for m in messages %}<|start|>{{ m['role'] }}<|message|>{{ m['content'] }}<|eot|>{% endfor %}")
    common = ["--teacher", teacher, "--config", "glimmer-tiny", "--arch", "muse-glimmer", "--data", data, "--steps", 2,
              "--batch", 2, "--seq-len", 16, "--no-progress", "-t", 1, "--specials", "muse-glimmer", "--chat-template", tmpl]
    r = squeeze("distill", *common, "--out", student, "--checkpoint", tmp_path / "ck.gguf")
    assert r.returncode == 0, r.stderr
    g = GGUFReader(str(student))
    f = g.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(f.parts[i]).decode() for i in f.data]
    assert tokens[:3] == ["<|begin_of_text|>", "<|eot|>", "<|eom|>"] and tokens[-1] == "<|patch|>"
    t = GGUFReader(str(teacher)).fields["tokenizer.ggml.tokens"]
    assert len(tokens) == len(t.data) + 1
    assert tokens[8:-1] == [bytes(t.parts[i]).decode() for i in t.data][8:]  # every other token as the teacher's
    assert {x.name: x for x in g.tensors}["output.weight"].shape[1] == len(tokens)
    c = g.fields["tokenizer.chat_template"]
    assert bytes(c.parts[c.data[0]]).decode() == tmpl.read_text()
    out = squeeze("generate", "-m", student, "--chat", "-p", "Who?", "-n", 3, "--temp", 0)
    assert out.returncode == 0, out.stderr
    # on-policy from the (renamed) checkpoint: the teacher's tokens are compared as renamed
    r = squeeze("distill", "--teacher", teacher, "--init", tmp_path / "ck.gguf", "--on-policy", "--data", data,
                "--steps", 1, "--batch", 2, "--seq-len", 20, "--prompt-len", 8, "--no-progress", "-t", 1,
                "--specials", "muse-glimmer", "--out", onp)
    assert r.returncode == 0, r.stderr
    for bad, needle in ((["--specials", "harmony"], "--specials"), (["--chat-template", tmp_path / "none.jinja"], "none.jinja")):
        r = squeeze("distill", *common[:-4], *bad, "--out", tmp_path / "bad.gguf")
        assert r.returncode == 1 and needle in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert not (tmp_path / "bad.gguf").exists()


def test_on_policy_distillation_resumes_exactly(tmp_path):
    teacher = tmp_path / "t.gguf"
    assert train(tmp_path, teacher).returncode == 0
    common = ["--teacher", teacher, "--init", teacher, "--on-policy", "--data", tmp_path / "data.txt", "--steps", 4,
              "--batch", 2, "--seq-len", 20, "--prompt-len", 8, "--no-progress", "-t", 1]
    straight, resumed, ckpt = tmp_path / "a.gguf", tmp_path / "b.gguf", tmp_path / "c.gguf"
    r = squeeze("distill", *common, "--out", straight, "--loss-csv", tmp_path / "a.csv")
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "a.gguf.sampler.tmp").exists()  # the sampler's scratch file is removed
    r = squeeze("distill", *common, "--out", tmp_path / "x.gguf", "--checkpoint", ckpt, "--stop-after", 2,
                "--loss-csv", tmp_path / "b.csv")
    assert r.returncode == 0, r.stderr
    r = squeeze("distill", *common[2:], "--teacher", teacher, "--resume", ckpt, "--out", resumed,
                "--loss-csv", tmp_path / "b.csv")
    assert r.returncode == 0, r.stderr
    a, b = weights(straight), weights(resumed)
    for k in a:  # the same prompts and samples after the resume: the same weights
        assert np.array_equal(a[k], b[k]), k
    # the resumed run appended its steps to the interrupted run's loss file
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
    for bad, needle in (([ "--topk", 4], "--topk"), (["--prompt-len", 20], "prompt length")):
        r = squeeze("distill", *common, "--out", tmp_path / "y.gguf", *bad)
        assert r.returncode == 1 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_stored_teacher_top_k(tmp_path):
    """--teacher-cache: the first run stores the teacher's top-k per window, a second run
    over the same text reads them all (no teacher forward) and ends on the same weights."""
    teacher = tmp_path / "t.gguf"
    assert train(tmp_path, teacher).returncode == 0
    cache = tmp_path / "teacher.top8"
    common = ["--teacher", teacher, "--config", "glimmer-tiny", "--data", tmp_path / "data.txt", "--steps", 3,
              "--batch", 2, "--seq-len", 16, "--topk", 8, "--temperature", 1, "--teacher-cache", cache,
              "--no-progress", "-t", 1]
    r = squeeze("distill", *common, "--out", tmp_path / "a.gguf")
    assert r.returncode == 0, r.stderr
    assert "read 0, computed 6" in r.stderr, r.stderr
    size = cache.stat().st_size
    assert size == 56 + 6 * 16 * (4 + 8 * 6)
    r = squeeze("distill", *common, "--out", tmp_path / "b.gguf")
    assert r.returncode == 0, r.stderr
    assert "read 6, computed 0" in r.stderr, r.stderr
    assert cache.stat().st_size == size
    a, b = weights(tmp_path / "a.gguf"), weights(tmp_path / "b.gguf")
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    # The mix with hard labels trains from the same cache.
    r = squeeze("distill", *common, "--hard-label-weight", 0.5, "--out", tmp_path / "c.gguf")
    assert r.returncode == 0 and "computed 0" in r.stderr, r.stderr
    # Mismatches are one-line errors that leave the cache as it was.
    before = cache.read_bytes()
    for bad, needle in ((["--topk", 4], "--topk 4"), (["--seq-len", 8], "--seq-len 8"),
                        (["--temperature", 2], "temperature"), (["--hard-label-weight", 2], "--hard-label-weight")):
        args = list(common)
        if bad[0] in args:
            args[args.index(bad[0]) + 1] = bad[1]
        else:
            args += bad
        r = squeeze("distill", *args, "--out", tmp_path / "x.gguf")
        assert r.returncode == 1 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)
    r = squeeze("distill", *[a for a in common if a not in ("--topk", 8)], "--out", tmp_path / "x.gguf")
    assert r.returncode == 1 and "--topk" in r.stderr, r.stderr
    other = tmp_path / "other.gguf"
    assert train(tmp_path, other, "--seed", 2).returncode == 0
    args = list(common)
    args[1] = other
    r = squeeze("distill", *args, "--out", tmp_path / "x.gguf")
    assert r.returncode == 1 and "another teacher" in r.stderr, r.stderr
    assert cache.read_bytes() == before

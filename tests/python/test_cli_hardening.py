"""tests/python/test_cli_hardening.py — two CLI contracts over every subcommand:

1. Every numeric option is parsed by one checked routine (tools/args): a bad value (junk,
   hex floats, inf/nan, out of its declared range, too large for its type) is a one-line
   error naming the option and a non-zero exit, before any file is read; a good value is
   accepted.
2. Every file squeeze writes goes through one atomic output path that refuses the
   command's own inputs (same device + inode, through symlinks) with a one-line error and
   leaves the input byte-for-byte as it was; the documented in-place updates (train
   --resume's checkpoint, --loss-csv appended on resume) still work.
"""
import os
import subprocess
import time

import pytest

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
TEXT = ("The lamp was lit at dusk and the keeper watched the sea until the morning came. "
        "Ships passed by the rocks and the light showed them the way to the harbour. ") * 40


def run(*args, timeout=300):
    return subprocess.run([SQ, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=timeout)


def assert_one_line_error(r, needle):
    assert r.returncode != 0, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert needle in lines[0], r.stderr


# ---------------------------------------------------------------------------------------
# 1. numeric options
#
# (subcommand argv, option, bad values, a good value). The context arguments make the
# command fail right after parsing when the value is good (no model, an invalid MoE shape),
# so "accepted" means: whatever the command says next, it is not about this option.

# Byte sizes (--device, --target-size) ignore spaces by design ("24 GB"), so no " 24GB" there.
INT_JUNK = ["abc", " 5", "5x", "0x10", "1e3", "4294967336999999999999"]
REAL_JUNK = ["abc", " 0.5", "0.5x", "0x1p-1", "inf", "nan", "1e999"]

TABLE = [
    (["generate"], "-n", ["-1"] + INT_JUNK, "8"),
    (["generate"], "--ctx", ["-5"] + INT_JUNK, "128"),
    (["generate"], "--batch", ["0", "-2"] + INT_JUNK, "16"),
    (["generate"], "--temp", ["-1", "-0.5"] + REAL_JUNK, "0"),
    (["generate"], "--top-k", ["-7", "4294967336"] + INT_JUNK, "0"),
    (["generate"], "--top-p", ["0", "5", "-0.1", "1.0001"] + REAL_JUNK, "1"),
    (["generate"], "--min-p", ["-0.1", "1.5"] + REAL_JUNK, "0"),
    (["generate"], "--repeat-penalty", ["0", "-1"] + REAL_JUNK, "1.1"),
    (["generate"], "--seed", ["-1"] + INT_JUNK, "42"),
    (["generate"], "-t", ["-3", "100000"] + INT_JUNK, "1"),
    (["bench"], "-p", ["-1", "1,,2", "1,x"] + INT_JUNK, "16,32"),
    (["bench"], "-n", ["-1"] + INT_JUNK, "0"),
    (["bench"], "-d", ["-1"] + INT_JUNK, "0"),
    (["bench"], "-r", ["0"] + INT_JUNK, "1"),
    (["bench"], "-b", ["0"] + INT_JUNK, "32"),
    (["bench"], "-t", ["-1", "100000"] + INT_JUNK, "2"),
    (["plan", "no-such-config"], "--ctx", ["0", "-4"] + INT_JUNK, "4096"),
    (["plan", "no-such-config"], "--headroom", ["-1"] + INT_JUNK, "0"),
    (["plan", "no-such-config"], "--batch", ["0"] + INT_JUNK, "64"),
    (["plan", "no-such-config"], "--device", ["infGB", "nanGB", "0x10GB", "-1GB", "24XB"], "80GB"),
    (["make-model", "--config", "no-such-config"], "--seed", ["-1"] + INT_JUNK, "3"),
    (["make-model", "--config", "no-such-config"], "--layers", ["0", "5000"] + INT_JUNK, "2"),
    (["make-model", "--config", "no-such-config"], "--embd", ["0", "-64"] + INT_JUNK, "64"),
    (["make-model", "--config", "no-such-config"], "--heads", ["0"] + INT_JUNK, "4"),
    (["make-model", "--config", "no-such-config"], "--kv-heads", ["0"] + INT_JUNK, "2"),
    (["make-model", "--config", "no-such-config"], "--head-dim", ["0"] + INT_JUNK, "16"),
    (["make-model", "--config", "no-such-config"], "--ff", ["0"] + INT_JUNK, "128"),
    (["make-model", "--config", "no-such-config"], "--vocab", ["0", "4294967296"] + INT_JUNK, "300"),
    (["make-model", "--config", "no-such-config"], "--window", ["-1"] + INT_JUNK, "0"),
    (["make-model", "--config", "no-such-config"], "--ctx", ["0"] + INT_JUNK, "256"),
    (["quantize"], "--target-bpw", ["0", "-4", "100"] + REAL_JUNK, "4.5"),
    (["quantize", "--dynamic", "/nonexistent/in.gguf", "/nonexistent/out.gguf"], "--target-size", ["infGB", "0GB", "1QB"], "512MiB"),
    (["quantize"], "--sample", ["0"] + INT_JUNK, "4096"),
    (["quantize"], "-t", ["-1", "100000"] + INT_JUNK, "1"),
    (["imatrix"], "--chunk", ["0", "1"] + INT_JUNK, "64"),
    (["imatrix"], "--chunks", ["-1"] + INT_JUNK, "2"),
    (["imatrix"], "--batch", ["0"] + INT_JUNK, "8"),
    (["imatrix"], "-t", ["-1", "100000"] + INT_JUNK, "1"),
    (["eval"], "--ctx", ["1", "-256"] + INT_JUNK, "64"),
    (["eval"], "--chunks", ["-1"] + INT_JUNK, "0"),
    (["eval"], "--task-items", ["0"] + INT_JUNK, "10"),
    (["eval"], "--sampled", ["-1"] + INT_JUNK, "0"),
    (["eval"], "--prompt-len", ["0"] + INT_JUNK, "8"),
    (["eval"], "--gen-len", ["0"] + INT_JUNK, "8"),
    (["eval"], "--seed", ["-1"] + INT_JUNK, "7"),
    (["eval"], "-t", ["-1", "100000"] + INT_JUNK, "1"),
    (["train"], "--steps", ["0", "-1"] + INT_JUNK, "10"),
    (["train"], "--checkpoint-every", ["-1"] + INT_JUNK, "5"),
    (["train"], "--tokenizer-sample", ["0"] + INT_JUNK, "1000"),
    (["train"], "--batch", ["0"] + INT_JUNK, "2"),
    (["train"], "--seq-len", ["0"] + INT_JUNK, "16"),
    (["train"], "--accum", ["0"] + INT_JUNK, "2"),
    (["train"], "--lr", ["0", "-1e-3"] + REAL_JUNK, "3e-4"),
    (["train"], "--min-lr", ["-1"] + REAL_JUNK, "0"),
    (["train"], "--warmup", ["-1"] + INT_JUNK, "0"),
    (["train"], "--wd", ["-0.1"] + REAL_JUNK, "0"),
    (["train"], "--clip", ["-1"] + REAL_JUNK, "0"),
    (["train"], "--eval-every", ["-1"] + INT_JUNK, "0"),
    (["train"], "--eval-sequences", ["0"] + INT_JUNK, "4"),
    (["train"], "--val-fraction", ["1", "-0.1"] + REAL_JUNK, "0"),
    (["train"], "--stop-after", ["-1"] + INT_JUNK, "2"),
    (["train"], "--seed", ["-1"] + INT_JUNK, "5"),
    (["train"], "--layers", ["0"] + INT_JUNK, "2"),
    (["train"], "-t", ["-3", "100000"] + INT_JUNK, "1"),
    (["distill"], "--temperature", ["0", "-1"] + REAL_JUNK, "2"),
    (["distill"], "--topk", ["-1"] + INT_JUNK, "8"),
    (["distill"], "--hard-label-weight", ["-0.5", "2"] + REAL_JUNK, "0.5"),
    (["distill"], "--prompt-len", ["0"] + INT_JUNK, "8"),
    (["distill"], "--sample-temperature", ["-1"] + REAL_JUNK, "0.7"),
    (["distill"], "--steps", ["0"] + INT_JUNK, "3"),
    (["moe", "test", "--topk", "9"], "-r", ["0", "2000"] + INT_JUNK, "2"),
    (["moe", "test", "--topk", "9"], "--tokens", ["-1"] + INT_JUNK, "8"),
    (["moe", "test", "--topk", "9"], "--hidden", ["0"] + INT_JUNK, "32"),
    (["moe", "test", "--topk", "9"], "--inter", ["0"] + INT_JUNK, "16"),
    (["moe", "test", "--topk", "9"], "--experts", ["0", "4294967304"] + INT_JUNK, "4"),
    (["moe", "test", "--experts", "3", "-r", "2"], "--topk", ["0", "4294967298"] + INT_JUNK, "2"),
    (["moe", "bench", "--topk", "100"], "--iters", ["0", "20000"] + INT_JUNK, "2"),
    (["moe", "bench", "--topk", "100"], "--skew", ["-1"] + REAL_JUNK, "1.1"),
    (["moe", "pipeline", "--topk", "100"], "--comm-workers", ["0", "65"] + INT_JUNK, "1"),
    (["moe", "pipeline", "--topk", "100"], "--compute-workers", ["0"] + INT_JUNK, "2"),
    (["moe", "pipeline", "--topk", "100"], "--tile-rows", ["0"] + INT_JUNK, "16"),
    (["moe", "pipeline", "--topk", "100"], "--ring", ["0"] + INT_JUNK, "1"),
    (["moe", "pipeline", "--topk", "100"], "--sweep", ["0", "1,x", "2,-1"], "1,2,4"),
    (["inspect", "/nonexistent.gguf"], "--items", ["-1"] + INT_JUNK, "4"),
]

CASES = [(cmd, opt, bad) for cmd, opt, bads, _ in TABLE for bad in bads]


@pytest.mark.parametrize("cmd,opt,bad", CASES, ids=[f"{' '.join(c[:2])} {o} {b!r}" for c, o, b in CASES])
def test_bad_numeric_value_is_a_one_line_error_naming_the_option(cmd, opt, bad):
    start = time.monotonic()
    r = run(*cmd, opt, bad, timeout=30)
    assert_one_line_error(r, opt)
    assert time.monotonic() - start < 10, "rejected only after real work"


@pytest.mark.parametrize("cmd,opt,good", [(c, o, g) for c, o, _, g in TABLE],
                         ids=[f"{' '.join(c[:2])} {o} {g}" for c, o, _, g in TABLE])
def test_good_numeric_value_is_accepted(cmd, opt, good):
    r = run(*cmd, opt, good, timeout=30)
    assert "expected an integer" not in r.stderr and "expected a number" not in r.stderr, r.stderr


def test_help_states_the_ranges():
    r = run("generate", "--help")
    assert r.returncode == 0
    for needle in ("0 < P <= 1", "T >= 0", "0 <= P <= 1", "0 <= K <= 2147483647", "8 per hardware thread"):
        assert needle in r.stdout, r.stdout


def test_numbers_reach_the_run_unchanged(tmp_path):
    """The good values above are not only parsed: a real generate with them works."""
    model = tmp_path / "m.gguf"
    assert run("make-model", "--config", "glimmer-tiny", "--layers", "2", "-o", model).returncode == 0
    r = run("generate", "-m", model, "-p", "Hello", "-n", 4, "--top-k", 0, "--top-p", 1, "--temp", 0.5,
            "--min-p", 0, "--ctx", 64, "--batch", 4, "-t", 1)
    assert r.returncode == 0, r.stderr


def test_inspect_on_a_fifo_fails_at_once(tmp_path):
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    r = run("inspect", fifo, timeout=20)  # used to block in open() forever
    assert_one_line_error(r, "not a regular file")


# ---------------------------------------------------------------------------------------
# 2. outputs never replace inputs

@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("outputs")
    m = d / "in.gguf"
    r = run("make-model", "--config", "glimmer-tiny", "--layers", "2", "-o", m)
    assert r.returncode == 0, r.stderr
    return m


def refused(r, path, before):
    assert_one_line_error(r, "refusing to overwrite")
    assert path.read_bytes() == before, "the input changed"


def test_quantize_report_refuses_the_input_model(model, tmp_path):
    before = model.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(model)
    for report in (model, link):
        r = run("quantize", model, tmp_path / "out.gguf", "Q8_0", "--report", report)
        refused(r, model, before)
        assert not (tmp_path / "out.gguf").exists(), "refused only after the work"
    r = run("quantize", model, tmp_path / "out.gguf", "Q8_0", "--report", tmp_path / "r.json")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.json").read_text().startswith("{")


def test_eval_json_refuses_the_text_and_the_model(model, tmp_path):
    text = tmp_path / "t.txt"
    text.write_text(TEXT)
    link = tmp_path / "link.json"
    link.symlink_to(text)
    for target, original in ((text, text), (link, text), (model, model)):
        before = original.read_bytes()
        r = run("eval", "-m", model, "-f", text, "--ctx", 32, "--chunks", 1, "--json", target)
        refused(r, original, before)
    r = run("eval", "-m", model, "-f", text, "--ctx", 32, "--chunks", 1, "--json", tmp_path / "e.json")
    assert r.returncode == 0, r.stderr
    assert '"perplexity"' in (tmp_path / "e.json").read_text()


def test_generate_dump_refuses_the_model(model, tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    m = dump / "tokens.npy"  # the model under the name of a dump file
    m.write_bytes(model.read_bytes())
    before = m.read_bytes()
    r = run("generate", "-m", m, "-p", "Hello", "-n", 1, "--temp", 0, "--dump", dump)
    refused(r, m, before)
    r = run("generate", "-m", model, "-p", "Hello", "-n", 1, "--temp", 0, "--dump", tmp_path / "ok")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ok" / "tokens.npy").read_bytes()[:6] == b"\x93NUMPY"


def test_imatrix_output_refuses_the_text(model, tmp_path):
    text = tmp_path / "t.txt"
    text.write_text(TEXT)
    before = text.read_bytes()
    r = run("imatrix", "-m", model, "-f", text, "--chunk", 32, "--chunks", 1, "-o", text)
    refused(r, text, before)


def train(tmp_path, *extra):
    data = tmp_path / "data.txt"
    if not data.exists():
        data.write_text(TEXT)
    return run("train", "--config", "glimmer-tiny", "--layers", 2, "--data", data, "--steps", 2, "--batch", 2,
               "--seq-len", 16, "--no-progress", "-t", 1, *extra)


@pytest.mark.parametrize("option", ["--out", "--loss-csv", "--plot", "--checkpoint"])
def test_train_outputs_refuse_the_data(tmp_path, option):
    data = tmp_path / "data.txt"
    data.write_text(TEXT)
    link = tmp_path / "link"
    link.symlink_to(data)
    before = data.read_bytes()
    extra = [] if option == "--out" else ["--out", tmp_path / "m.gguf"]
    for target in (data, link):
        r = train(tmp_path, option, target, *extra)
        refused(r, data, before)
    assert not (tmp_path / "m.gguf").exists(), "refused only after training"


def test_train_resume_updates_checkpoint_and_loss_csv_in_place(tmp_path):
    ckpt, csv = tmp_path / "ckpt.gguf", tmp_path / "loss.csv"
    r = train(tmp_path, "--out", tmp_path / "a.gguf", "--checkpoint", ckpt, "--loss-csv", csv, "--stop-after", 1)
    assert r.returncode == 0, r.stderr
    first = csv.read_text()
    assert len(first.splitlines()) == 2
    # The checkpoint that --resume reads is also the one --checkpoint writes: allowed.
    r = train(tmp_path, "--out", tmp_path / "a.gguf", "--resume", ckpt, "--checkpoint", ckpt, "--loss-csv", csv)
    assert r.returncode == 0, r.stderr
    text = csv.read_text()
    assert text.startswith(first) and len(text.splitlines()) == 3, text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gguf", "ckpt.gguf", "data.txt", "loss.csv"]
    # ...but no other output may replace the checkpoint being resumed.
    before = ckpt.read_bytes()
    r = train(tmp_path, "--out", ckpt, "--resume", ckpt)
    refused(r, ckpt, before)


def test_distill_teacher_cache_refuses_inputs(tmp_path):
    teacher = tmp_path / "t.gguf"
    assert train(tmp_path, "--out", teacher).returncode == 0
    data = tmp_path / "data.txt"
    for cache in (data, teacher):
        before = cache.read_bytes()
        r = run("distill", "--teacher", teacher, "--config", "glimmer-tiny", "--layers", 2, "--data", data,
                "--steps", 1, "--batch", 2, "--seq-len", 16, "--topk", 4, "--teacher-cache", cache,
                "--no-progress", "-t", 1, "--out", tmp_path / "s.gguf")
        refused(r, cache, before)


# ---------------------------------------------------------------------------------------
# 3. one output mechanism (tools/args.h reads / writes): the cases the reliability review
#    found overwritten with exit 0

def test_train_refuses_its_chat_template_and_two_outputs_on_one_path(tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    before = template.read_bytes()
    refused(train(tmp_path, "--chat-template", template, "--out", template), template, before)
    r = train(tmp_path, "--out", tmp_path / "m.gguf", "--plot", tmp_path / "m.gguf")
    assert_one_line_error(r, "both name")
    assert not (tmp_path / "m.gguf").exists()


def test_moe_train_loss_csv_refuses_the_data(tmp_path):
    data = tmp_path / "data.txt"
    data.write_text(TEXT * 20)
    before = data.read_bytes()
    r = run("moe-train", "--data", data, "--steps", 1, "--loss-csv", data)
    refused(r, data, before)


def test_train_drafter_refuses_init_and_resume_as_outputs(model, tmp_path):
    prompts = tmp_path / "p.txt"
    prompts.write_text("Hello\nWorld\n" * 20)
    init = tmp_path / "init.gguf"
    init.write_bytes(b"GGUF-not-really")
    before = init.read_bytes()
    for opt in ("--init", "--resume"):
        r = run("train-drafter", "--target", model, "--prompts", prompts, "--data", tmp_path / "d", opt, init, "-o", init)
        refused(r, init, before)


def test_convert_refuses_the_files_of_its_input_folder(tmp_path):
    hf = tmp_path / "hf"
    hf.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json",
                 "model.safetensors.index.json"):
        (hf / name).write_text('{"x": 1}')
        before = (hf / name).read_bytes()
        refused(run("convert", hf, hf / name), hf / name, before)


def test_a_killed_write_leaves_no_temporary(model, tmp_path):
    # SIGTERM while quantize writes: the hidden .tmp file used to stay behind.
    big = tmp_path / "big.gguf"
    r = run("make-model", "--config", "glimmer-tiny", "--layers", "24", "--embd", "512", "-o", big)
    if r.returncode != 0:
        r = run("make-model", "--config", "glimmer-tiny", "--layers", "24", "-o", big)
    assert r.returncode == 0, r.stderr
    for attempt in range(5):
        out = tmp_path / f"out{attempt}.gguf"
        p = subprocess.Popen([SQ, "quantize", str(big), str(out), "Q8_0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.time()
        while p.poll() is None and not list(tmp_path.glob(f".out{attempt}.gguf.tmp-*")) and time.time() - t0 < 30:
            time.sleep(0.001)
        if p.poll() is not None:
            continue  # finished before we saw its temporary: try again
        p.terminate()
        assert p.wait(30) == -15
        assert not list(tmp_path.glob(".*.tmp-*")), list(tmp_path.iterdir())
        assert not out.exists()
        return
    pytest.skip("quantize always finished before its temporary could be seen")

"""tests/python/test_speculative_cli.py — speculative decoding from the command line: `generate`
and `chat` with --draft (a DFlash drafter) or --lookup print exactly what plain decoding
prints, greedy and seeded; a drafter that does not fit the model, or is not a drafter, is a
one-line error with a non-zero exit."""
import os
import pathlib
import subprocess

import gguf
import numpy as np
import pytest

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
DRAFTER = ROOT / "tests" / "fixtures" / "dflash" / "tiny" / "drafter.gguf"  # width 64, taps 0 2 4, mask 5


def run(*args, check=True, stdin=None):
    r = subprocess.run([SQ, *args], capture_output=True, text=True, errors="replace", timeout=300, input=stdin)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def one_line_error(r, *needles):
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """A random model the fixture drafter fits: width 64, 6 layers, 512 tokens, window 8."""
    path = tmp_path_factory.mktemp("spec") / "t.gguf"
    run("make-model", "--config", "muse-glimmer-tiny", "--type", "Q8_0", "--seed", "3", "-o", str(path))
    return path


PROMPT = "The keeper climbed the stairs, the keeper climbed the stairs, the keeper climbed"


@pytest.mark.parametrize("source", [["--draft", str(DRAFTER)], ["--lookup"], ["--lookup", "--draft-block", "4"],
                                    ["--draft", str(DRAFTER), "--draft-fixed", "--draft-block", "5"]])
@pytest.mark.parametrize("sampling", [["--temp", "0"], ["--temp", "0.8", "--seed", "7"]])
def test_generate_prints_what_plain_decoding_prints(target, source, sampling):
    plain = run("generate", "-m", str(target), "-p", PROMPT, "-n", "48", "--ignore-eos", *sampling)
    spec = run("generate", "-m", str(target), "-p", PROMPT, "-n", "48", "--ignore-eos", *sampling, *source)
    assert spec.stdout == plain.stdout
    summary = spec.stderr.strip().splitlines()[-1]
    assert summary.startswith("speculative (") and "tau" in summary


def test_chat_turns_with_speculation_match_plain(target, tmp_path):
    # the random model has no chat template: give it a minimal one
    turns = "Hello there\nTell me more\n"
    jinja = tmp_path / "t.jinja"
    jinja.write_text("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:")
    tmpl = tmp_path / "t.gguf"
    run("make-model", "--config", "muse-glimmer-tiny", "--type", "Q8_0", "--seed", "3", "-o", str(tmpl),
        "--chat-template", str(jinja))
    for source in (["--lookup"], ["--draft", str(DRAFTER)]):
        plain = run("chat", "-m", str(tmpl), "--temp", "0", "-n", "40", "--ignore-eos", stdin=turns)
        spec = run("chat", "-m", str(tmpl), "--temp", "0", "-n", "40", "--ignore-eos", *source, stdin=turns)
        assert spec.stdout == plain.stdout
        assert len(plain.stdout) > 40
        # the second turn reused the first's cache, and drafts were verified
        assert "reused" in spec.stderr and "verify steps" in spec.stderr


def rewrite(src, dst, *, drop=(), set_u32=None, set_arr=None):
    """Copies a GGUF, leaving out the keys in `drop` and overriding some u32 / u32-array keys."""
    r = gguf.GGUFReader(str(src))
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    w = gguf.GGUFWriter(str(dst), arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name in drop:
            continue
        if set_u32 and name in set_u32:
            w.add_uint32(name, set_u32[name])
        elif set_arr and name in set_arr:
            w.add_array(name, set_arr[name])
        elif f.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_array(name, [f.parts[i].tolist()[0] for i in f.data])
        elif f.types[0] == gguf.GGUFValueType.STRING:
            w.add_string(name, bytes(f.parts[-1]).decode())
        else:
            w.add_key_value(name, f.parts[-1].tolist()[0], f.types[0])
    for t in r.tensors:
        w.add_tensor(t.name, np.array(t.data).reshape([int(x) for x in reversed(t.shape)]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


def test_bad_drafters_are_refused(target, tmp_path):
    gen = ("generate", "-m", str(target), "-p", "x", "-n", "4")
    # taps beyond the target's 6 layers (stored + 1: 7 is layer 6)
    beyond = rewrite(DRAFTER, tmp_path / "beyond.gguf", set_arr={"dflash.target_layers": [1, 3, 7]})
    one_line_error(run(*gen, "--draft", str(beyond), check=False), "taps target layer 6", "6 layers")
    no_mask = rewrite(DRAFTER, tmp_path / "nomask.gguf", drop=("dflash.mask_token_id",))
    one_line_error(run(*gen, "--draft", str(no_mask), check=False), "dflash.mask_token_id", "missing")
    big_mask = rewrite(DRAFTER, tmp_path / "bigmask.gguf", set_u32={"dflash.mask_token_id": 512})
    one_line_error(run(*gen, "--draft", str(big_mask), check=False), "mask token id 512")
    no_taps = rewrite(DRAFTER, tmp_path / "notaps.gguf", drop=("dflash.target_layers",))
    one_line_error(run(*gen, "--draft", str(no_taps), check=False), "dflash.target_layers")
    # a drafter for a wider model
    wide = tmp_path / "wide.gguf"
    run("make-model", "--config", "muse-glimmer-tiny", "--embd", "128", "--type", "Q8_0", "-o", str(wide))
    one_line_error(run("generate", "-m", str(wide), "-p", "x", "-n", "4", "--draft", str(DRAFTER), check=False),
                   "width 64 differs from the target's 128")
    # not a drafter at all, and a drafter given as the model
    one_line_error(run(*gen, "--draft", str(target), check=False), "is not a DFlash drafter")
    one_line_error(run("generate", "-m", str(DRAFTER), "-p", "x", check=False), "pass it with --draft")
    one_line_error(run(*gen, "--draft", str(DRAFTER), "--draft-block", "9", check=False), "trained block size 8")
    one_line_error(run(*gen, "--draft", str(DRAFTER), "--lookup", check=False), "give one")
    one_line_error(run(*gen, "--draft-block", "4", check=False), "need --draft or --lookup")
    one_line_error(run(*gen, "--draft", str(tmp_path / "missing.gguf"), check=False), "missing.gguf")

"""tests/python/test_reasoning_cli.py — reasoning effort end to end.

`squeeze reasoning-data`: every answer recomputed here from the question's text alone (an
independent computation), the traces end in that answer, the splits never share a
question, a seed gives the same problems, the chat rendering states each conversation's
level in its system block.

With the shipped reasoning model (models/muse-glimmer-reasoning.q8_0.gguf): the effort
reaches the model through the template (`Reasoning strength: LEVEL.` in the prompt's
tokens), a budget is never exceeded and a forced close happens at a word boundary and is
followed by an answer, `--thinking-budget 0` thinks not at all, and `eval --reasoning`
reports what it ran. Bad input is a one-line error."""
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

BIN = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "muse-glimmer-reasoning.q8_0.gguf"
TEMPLATE = ROOT / "tests" / "fixtures" / "chat_templates" / "muse-glimmer.jinja"
needs_model = pytest.mark.skipif(not MODEL.exists(), reason=f"{MODEL} is not there (scripts/train-reasoning-model)")


def squeeze(*args, **kw):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=600, **kw)


def problems(tmp_path, split, count, seed):
    out = tmp_path / f"{split}-{seed}.jsonl"
    r = squeeze("reasoning-data", "--split", split, "--count", count, "--seed", seed, "-o", out)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def solve(question):
    """The answer from the question's text, computed without the generator's code."""
    m = re.fullmatch(r"What is (\d+) \+ (\d+)\?", question)
    if m:
        return str(int(m[1]) + int(m[2]))
    m = re.fullmatch(r"What is (\d+) x (\d)\?", question)
    if m:
        return str(int(m[1]) * int(m[2]))
    m = re.fullmatch(r'How many times does the letter "([a-z])" appear in ((?:[a-z] )*[a-z])\?', question)
    if m:
        return str(m[2].split().count(m[1]))
    m = re.fullmatch(r"Sort ([\d, ]+) from smallest to largest\.", question)
    if m:
        return ", ".join(str(x) for x in sorted(int(x) for x in m[1].split(", ")))
    raise AssertionError(f"unknown question form: {question}")


def test_answers_checked_by_an_independent_computation(tmp_path):
    ps = problems(tmp_path, "test", 600, 303)
    assert len(ps) == 600
    families = {p["family"] for p in ps}
    assert families == {"addition", "multiplication", "counting", "sorting"}
    assert {p["difficulty"] for p in ps} == {1, 2, 3, 4}
    for p in ps:
        assert solve(p["question"]) == p["answer"], p
        for level in ("low", "medium", "high", "xhigh"):
            trace = p["traces"][level]
            assert trace.endswith(p["answer"] + "."), (level, trace)


def test_traces_grow_with_effort(tmp_path):
    ps = problems(tmp_path, "train", 400, 7)
    mean = {lvl: np.mean([len(p["traces"][lvl].split()) for p in ps]) for lvl in ("low", "medium", "high", "xhigh")}
    assert mean["low"] < mean["medium"] < mean["high"] < mean["xhigh"], mean


def test_splits_never_share_a_question_and_seeds_repeat(tmp_path):
    train = problems(tmp_path, "train", 3000, 1)
    valid = problems(tmp_path, "valid", 300, 1)
    test = problems(tmp_path, "test", 300, 1)
    q = lambda ps: {p["question"] for p in ps}
    assert not (q(train) & q(valid)) and not (q(train) & q(test)) and not (q(valid) & q(test))
    assert len(q(train)) == 3000  # distinct within a split
    assert problems(tmp_path, "test", 300, 1) == test
    assert problems(tmp_path, "test", 300, 2) != test


def test_chat_rendering_states_the_level(tmp_path):
    out = tmp_path / "train.txt"
    r = squeeze("reasoning-data", "--split", "train", "--count", 50, "--seed", 5, "--format", "chat",
                "--template", TEMPLATE, "--truncated-share", 0, "-o", out)
    assert r.returncode == 0, r.stderr
    convs = out.read_text().split("<|begin_of_text|>")[1:]
    assert len(convs) == 50
    seen = set()
    for c in convs:
        level = re.search(r"Reasoning strength: (\w+)\.", c)[1]
        seen.add(level)
        question = re.search(r"<\|start\|>user<\|message\|>(.*?)<\|eot\|>", c)[1]
        thinking = re.search(r"<\|start\|>assistant to=self<\|message\|>(.*?)<\|eom\|>", c)[1]
        answer = re.search(r"<\|start\|>assistant to=user<\|message\|>(.*?)<\|eot\|>", c)[1]
        assert answer == solve(question)
        assert thinking.endswith(answer + ".")
    assert seen == {"low", "medium", "high", "xhigh"}


def test_bad_input_is_one_line(tmp_path):
    for args, want in [(("--split", "dev", "-o", tmp_path / "x"), "--split must be"),
                       (("--split", "test", "--format", "csv", "-o", tmp_path / "x"), "--format must be"),
                       (("--split", "test", "--format", "chat", "-o", tmp_path / "x"), "needs --template"),
                       (("--split", "test", "--kjv", TEMPLATE, "-o", tmp_path / "x"), "need --format chat")]:
        r = squeeze("reasoning-data", *args)
        assert r.returncode != 0 and want in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')
    r = squeeze("eval", "-m", ROOT / "models" / "muse-glimmer-kjv.f16.gguf", "--reasoning", bad)
    assert r.returncode != 0 and "bad.jsonl:1" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = squeeze("generate", "-m", ROOT / "models" / "kjv-teacher.q8_0.gguf", "-p", "x", "--thinking-budget", 3)
    assert r.returncode != 0 and "need --chat" in r.stderr, r.stderr


# --- with the shipped model -------------------------------------------------------------

def generate(*extra, prompt="What is 4821 + 3967?"):
    r = squeeze("generate", "-m", MODEL, "--chat", "-p", prompt, "-n", 400, "--temp", 0, *extra)
    assert r.returncode == 0, r.stderr
    return r


@needs_model
@pytest.mark.parametrize("level", ["low", "medium", "high", "xhigh"])
def test_effort_reaches_the_model_through_the_template(tmp_path, level):
    d = tmp_path / level
    r = squeeze("generate", "-m", MODEL, "--chat", "-p", "What is 12 + 30?", "-n", 1, "--temp", 0,
                "--reasoning-effort", level, "--dump", d)
    assert r.returncode == 0, r.stderr
    ids = " ".join(str(int(x)) for x in np.load(d / "tokens.npy").ravel())
    text = squeeze("tokenize", "-m", MODEL, "--decode", "-p", ids).stdout
    assert f"Reasoning strength: {level}." in text
    assert "Reasoning strength" in text and text.count("Reasoning strength") == 1


@needs_model
def test_none_is_low_not_the_default(tmp_path):
    outs = {}
    for level in ("none", "low"):
        d = tmp_path / level
        r = squeeze("generate", "-m", MODEL, "--chat", "-p", "hi", "-n", 1, "--reasoning-effort", level, "--dump", d)
        assert r.returncode == 0, r.stderr
        outs[level] = np.load(d / "tokens.npy").ravel().tolist()
    assert outs["none"] == outs["low"]


@needs_model
def test_budget_closes_at_a_word_boundary_then_answers():
    full = generate("--reasoning-effort", "xhigh")
    m = re.search(r"reasoning xhigh: (\d+) thinking tokens of a budget of (\d+)", full.stderr)
    natural = int(m[1])
    assert natural > 20, full.stderr
    for budget in (5, 12, natural // 2):
        r = generate("--reasoning-effort", "xhigh", "--thinking-budget", budget)
        m = re.search(r"reasoning xhigh: (\d+) thinking tokens of a budget of (\d+)( \(the budget closed the thinking\))?",
                      r.stderr)
        assert m and int(m[2]) == budget, r.stderr
        assert int(m[1]) <= budget and m[3], r.stderr
        # stderr: the thinking, a line end before the answer, then the timing line
        thinking = r.stderr[: r.stderr.index("\nprompt:")].removesuffix("\n")
        # the thinking the user saw is a prefix of the unbudgeted one, cut between words
        full_thinking = full.stderr[: full.stderr.index("\nprompt:")].removesuffix("\n")
        assert full_thinking.startswith(thinking), (thinking, full_thinking)
        at_boundary = thinking == "" or thinking[-1].isspace() or full_thinking[len(thinking)].isspace()
        assert at_boundary, (thinking, full_thinking)
        assert r.stdout.strip() != "", "no answer after the forced close"


@needs_model
def test_budget_zero_thinks_not_at_all():
    r = generate("--thinking-budget", 0)
    assert "reasoning high: 0 thinking tokens of a budget of 0" in r.stderr, r.stderr
    assert r.stderr.startswith("\nprompt:") or r.stderr.startswith("prompt:"), r.stderr
    assert r.stdout.strip() != ""


@needs_model
def test_eval_reasoning_reports_each_level(tmp_path):
    ps = tmp_path / "test.jsonl"
    assert squeeze("reasoning-data", "--split", "test", "--count", 8, "--seed", 303, "-o", ps).returncode == 0
    js, png = tmp_path / "r.json", tmp_path / "r.png"
    r = squeeze("eval", "-m", MODEL, "--reasoning", ps, "--json", js, "--plot", png, "--bootstrap", 200)
    assert r.returncode == 0, r.stderr
    out = json.loads(js.read_text())
    names = [s["name"] for s in out["settings"]]
    assert names[0].startswith("no thinking") and names[1:] == ["low", "medium", "high", "xhigh"]
    for s in out["settings"]:
        assert s["over_budget"] == 0 and s["no_answer"] == 0, s
        assert 0 <= s["accuracy"] <= 1
    assert out["settings"][0]["mean_thinking_tokens"] == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| paired difference |" in r.stdout


@needs_model
def test_speculative_decoding_keeps_the_budgeted_output_exactly():
    for extra in (("--thinking-budget", 12), ("--reasoning-effort", "high")):
        plain = generate(*extra)
        fast = generate(*extra, "--lookup")
        assert fast.stdout == plain.stdout
        strip = lambda s: s[: s.index("\nprompt:")]  # the thinking (and its line end)
        assert strip(fast.stderr) == strip(plain.stderr)


@needs_model
def test_server_enforces_the_budget_and_returns_reasoning_content():
    import openai
    from serve_util import Server

    s = Server(BIN, "-m", str(MODEL), "--parallel", "2", "--threads", "2")
    try:
        client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=300)
        ask = lambda **kw: client.chat.completions.create(
            model=MODEL.name, messages=[{"role": "user", "content": "What is 4821 + 3967?"}], temperature=0,
            max_tokens=400, **kw)
        full = ask(reasoning_effort="xhigh")
        thinking_of = lambda r: getattr(r.choices[0].message, "reasoning_content", None) or ""
        full_thinking = thinking_of(full)
        assert full_thinking and full.choices[0].message.content
        cut = ask(reasoning_effort="xhigh", extra_body={"thinking_budget": 10})
        thinking = thinking_of(cut)
        assert full_thinking.startswith(thinking)
        assert thinking == "" or thinking[-1].isspace() or full_thinking[len(thinking)].isspace()
        assert cut.usage.completion_tokens_details.reasoning_tokens <= 10
        assert cut.choices[0].message.content.strip() != ""
        none = ask(extra_body={"thinking_budget": 0})
        assert thinking_of(none) == "" and none.choices[0].message.content.strip()
        # budget 0 masks `self` from the start, as generate does: the same direct answer
        assert none.choices[0].message.content == generate("--thinking-budget", 0).stdout
        assert none.usage.completion_tokens_details.reasoning_tokens == 0
        # Streaming gives the same split.
        stream = client.chat.completions.create(
            model=MODEL.name, messages=[{"role": "user", "content": "What is 4821 + 3967?"}], temperature=0,
            max_tokens=400, reasoning_effort="xhigh", extra_body={"thinking_budget": 10}, stream=True)
        r, c = "", ""
        for chunk in stream:
            if chunk.choices:
                d = chunk.choices[0].delta
                r += getattr(d, "reasoning_content", None) or ""
                c += d.content or ""
        assert (r, c) == (thinking, cut.choices[0].message.content)
        with pytest.raises(openai.BadRequestError):
            ask(extra_body={"thinking_budget": -1})
    finally:
        assert s.stop() == 0, "".join(s.log)


@needs_model
def test_chat_keeps_the_budget_per_turn_and_shows_thinking_apart():
    r = squeeze("chat", "-m", MODEL, "--temp", 0, "-n", 300, "--reasoning-effort", "xhigh", "--thinking-budget", 12,
                input="What is 4821 + 3967?\nSort 52, 17, 86, 33 from smallest to largest.\n")
    assert r.returncode == 0, r.stderr
    notes = re.findall(r"\[thinking: (\d+) tokens of a budget of 12(, closed by the budget)?\]", r.stderr)
    assert len(notes) == 2, r.stderr  # one counter per turn
    for used, closed in notes:
        assert int(used) <= 12 and closed
    answers = [line for line in r.stdout.splitlines() if line.strip()]
    assert len(answers) == 2, r.stdout  # the thinking is not in the answers
    assert "write" not in r.stdout and "Written" not in r.stdout

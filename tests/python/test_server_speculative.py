"""`squeeze serve --lookup` and `--draft`: speculative decoding inside the continuous-batching
engine (drafts ride in each slot's chunk of the step) answers exactly what the plain server
answers — greedy, alone and four at a time, a seeded sampled answer, and answers under a
JSON schema (the grammar masks every row the drafts are verified on) — and counts its
drafts in /metrics. Runs the shipped Muse Glimmer student."""
import json
import concurrent.futures
import os
import pathlib
import subprocess

import jsonschema
import openai
import pytest

from serve_util import Server

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
STUDENT = ROOT / "models/muse-glimmer-kjv.f16.gguf"
QUESTIONS = ["Who begat Enos?", "What did the LORD say unto Moses?", "Tell me of the ark.", "Why did Cain slay Abel?"]


def answers(server, **kw):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=300)
    kw.setdefault("temperature", 0)

    def ask(q):
        r = client.chat.completions.create(model=STUDENT.name, messages=[{"role": "user", "content": q}],
                                           max_tokens=40, **kw)
        return r.choices[0].message.content

    alone = [ask(q) for q in QUESTIONS]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        together = list(pool.map(ask, QUESTIONS))
    return alone, together


# Repeated keys give prompt lookup drafts to verify under the grammar.
SCHEMA = {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "object", "properties": {
    "book": {"enum": ["Genesis", "Exodus", "Numbers"]}, "verse": {"type": "integer", "minimum": 1, "maximum": 50},
    "text": {"type": "string", "maxLength": 10}}, "required": ["book", "verse", "text"]}}


def schema_answers(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=300)
    out = []
    for temperature, seed in [(0, 0), (0.8, 5), (0.8, 6)]:
        r = client.completions.create(model=STUDENT.name, prompt="The verses, as JSON:", max_tokens=200,
                                      temperature=temperature, seed=seed, extra_body={"json_schema": SCHEMA})
        assert r.choices[0].finish_reason == "stop", r.choices[0].text
        jsonschema.validate(json.loads(r.choices[0].text), SCHEMA)
        out.append(r.choices[0].text)
    return out


@pytest.fixture(scope="module")
def plain():
    s = Server(SQ, "-m", str(STUDENT), "--parallel", "4", "--threads", "2")
    out = answers(s), answers(s, temperature=0.8, seed=3), schema_answers(s)
    assert s.stop() == 0, "".join(s.log)
    return out


@pytest.fixture(scope="module")
def drafter(tmp_path_factory):
    path = tmp_path_factory.mktemp("srvspec") / "d.gguf"
    subprocess.run([SQ, "make-model", "--drafter-for", str(STUDENT), "--draft-layers", "2", "--draft-block", "6",
                    "--type", "Q8_0", "-o", str(path)], check=True, capture_output=True)
    return path


@pytest.mark.parametrize("source", ["lookup", "draft"])
def test_speculative_server_answers_what_the_plain_server_answers(plain, drafter, source):
    args = ["--lookup"] if source == "lookup" else ["--draft", str(drafter)]
    s = Server(SQ, "-m", str(STUDENT), "--parallel", "4", "--threads", "2", "--draft-fixed", *args)
    try:
        (alone, together), (sampled, _) = answers(s), answers(s, temperature=0.8, seed=3)
        before = s.metrics()["squeeze_spec_verify_steps_total"]
        constrained = schema_answers(s)
        m = s.metrics()
    finally:
        assert s.stop() == 0, "".join(s.log)
    (plain_alone, plain_together), (plain_sampled, _), plain_constrained = plain
    assert constrained == plain_constrained
    assert m["squeeze_spec_verify_steps_total"] > before  # the constrained answers were verified drafts too
    assert alone == plain_alone
    assert together == plain_alone
    assert sampled == plain_sampled
    assert m["squeeze_spec_verify_steps_total"] > 0
    assert 0 <= m["squeeze_spec_accepted_tokens_total"] <= m["squeeze_spec_draft_tokens_total"]
    if source == "lookup":  # the student repeats its verses: some drafts are kept
        assert m["squeeze_spec_accepted_tokens_total"] > 0


def test_bad_speculation_options_are_one_line_errors(drafter):
    for args, needle in [(["--lookup", "--draft", str(drafter)], "give one"),
                         (["--draft-block", "4"], "need --draft or --lookup"),
                         (["--draft", str(drafter), "--draft-block", "9"], "trained block size 6")]:
        r = subprocess.run([SQ, "serve", "-m", str(STUDENT), "--port", "0", *args], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode != 0
        errors = [line for line in r.stderr.splitlines() if "error" in line]  # after a "loading" line, maybe
        assert len(errors) == 1 and needle in errors[0], r.stderr

"""tests/python/test_generation_paths.py — `squeeze generate`, `squeeze chat` and `squeeze serve`
are one generation path (src/generate/sequence.h): for the same prompt, seed and options they
give the same tokens — greedy and sampled, without and with speculative decoding (prompt
lookup, a DFlash drafter), with a thinking budget that forces a close.

The CLI runs with --batch-invariant, the products the server always runs (docs/development.md:
the determinism rule); the answer, the thinking and the token count must match exactly."""
import os
import re
import subprocess
from pathlib import Path

import openai
import pytest

from serve_util import Server

BIN = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
ROOT = Path(__file__).resolve().parents[2]
REASONING = ROOT / "models" / "muse-glimmer-reasoning.q8_0.gguf"
STUDENT = ROOT / "models" / "muse-glimmer-kjv.f16.gguf"
QUESTION = "What is 4821 + 3967?"

needs_models = pytest.mark.skipif(not (REASONING.exists() and STUDENT.exists()),
                                  reason="the shipped models are not there (scripts/train-reasoning-model)")

GREEDY = {"temp": 0}
SAMPLED = {"temp": 0.8, "top-k": 40, "top-p": 0.9, "min-p": 0.05, "seed": 7}


def squeeze(*args, **kw):
    r = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, errors="replace", timeout=600, **kw)
    assert r.returncode == 0, r.stderr
    return r


def cli_flags(sampling, n):
    flags = ["-n", n, "--batch-invariant"]
    for k, v in sampling.items():
        flags += [f"--{k}", v]
    return flags


def request_fields(sampling, n):
    """The same options as an OpenAI request (llama-server's extras in extra_body)."""
    body = {"temperature": sampling["temp"], "max_tokens": n}
    extra = {}
    if "top-p" in sampling:
        body["top_p"] = sampling["top-p"]
    if "seed" in sampling:
        body["seed"] = sampling["seed"]
    for k in ("top-k", "min-p"):
        if k in sampling:
            extra[k.replace("-", "_")] = sampling[k]
    if sampling["temp"] != 0:
        extra.setdefault("top_k", 40)  # the CLI's defaults, stated for the server
        extra.setdefault("min_p", 0.05)
    return body, extra


@pytest.fixture(scope="module")
def drafter(tmp_path_factory):
    """A DFlash drafter for the reasoning model (random weights: it proposes poor drafts,
    which the verify-walk must reject without changing a token)."""
    out = tmp_path_factory.mktemp("drafter") / "drafter.gguf"
    squeeze("make-model", "--drafter-for", REASONING, "--draft-layers", "2", "--draft-block", "6", "-o", out)
    return out


def speculation_flags(kind, drafter):
    return {"none": [], "lookup": ["--lookup"], "dflash": ["--draft", str(drafter)]}[kind]


@needs_models
@pytest.mark.parametrize("kind", ["none", "lookup", "dflash"])
def test_generate_chat_and_serve_give_the_same_answer(kind, drafter):
    spec = speculation_flags(kind, drafter)
    s = Server(BIN, "-m", str(REASONING), "--parallel", "2", *spec)
    try:
        client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=300)
        for sampling in (GREEDY, SAMPLED):
            n = 120
            reasoning = ["--reasoning-effort", "xhigh", "--thinking-budget", 10]
            flags = [*cli_flags(sampling, n), *reasoning, *spec]
            gen = squeeze("generate", "-m", REASONING, "--chat", "-p", QUESTION, *flags)
            chat = squeeze("chat", "-m", REASONING, *flags, input=QUESTION + "\n")
            body, extra = request_fields(sampling, n)
            served = client.chat.completions.create(model=REASONING.name, messages=[{"role": "user", "content": QUESTION}],
                                                    reasoning_effort="xhigh", extra_body={**extra, "thinking_budget": 10},
                                                    **body)
            what = f"{kind}, {sampling}"
            assert "(the budget closed the thinking)" in gen.stderr, what  # the case under test: a forced close
            answer = served.choices[0].message.content
            thinking = getattr(served.choices[0].message, "reasoning_content", None) or ""
            assert gen.stdout == answer, what
            assert chat.stdout == answer + "\n", what
            assert gen.stderr[: gen.stderr.index("\nprompt:")].strip() == thinking.strip(), what
            assert chat.stderr[: chat.stderr.index("\n[thinking:")].strip() == thinking.strip(), what
            tokens = served.usage.completion_tokens
            assert re.search(rf"generation: {tokens} tokens", gen.stderr), (what, tokens, gen.stderr)
            assert re.search(rf"answer: {tokens} tokens", chat.stderr), (what, tokens, chat.stderr)
    finally:
        assert s.stop() == 0, "".join(s.log)


@needs_models
@pytest.mark.parametrize("sampling", [GREEDY, SAMPLED], ids=["greedy", "sampled"])
def test_generate_and_serve_complete_a_plain_prompt_alike(sampling):
    prompt, n = "In the beginning", 60
    gen = squeeze("generate", "-m", STUDENT, "-p", prompt, "--ignore-eos", *cli_flags(sampling, n))
    s = Server(BIN, "-m", str(STUDENT), "--parallel", "2")
    try:
        client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=300)
        body, extra = request_fields(sampling, n)
        served = client.completions.create(model=STUDENT.name, prompt=prompt, extra_body={**extra, "ignore_eos": True},
                                           **body)
    finally:
        assert s.stop() == 0, "".join(s.log)
    assert gen.stdout == prompt + served.choices[0].text
    assert served.usage.completion_tokens == n
    assert f"generation: {n} tokens" in gen.stderr

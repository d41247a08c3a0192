"""`squeeze serve` through the official `openai` client and raw HTTP: chat and completions,
streaming framing, usage counts, stops, seeds, batch-invariant concurrency, prefix reuse,
every error status, keys, disconnects and graceful shutdown.

The server runs the shipped Muse Glimmer student (models/muse-glimmer-kjv.f16.gguf); a
few checks repeat on SmolLM2-135M-Instruct when scripts/get-models has installed it.
SQUEEZE_BIN picks the binary (scripts/test runs this file against Release and ASan+UBSan)."""
import concurrent.futures
import http.client
import json
import os
import pathlib
import re
import socket
import time
import urllib.parse

import jsonschema
import openai
import pytest

from cdp_util import Browser, find_chromium
from serve_util import Server

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
MODELS = pathlib.Path(os.environ.get("SQUEEZE_MODELS", ROOT / "build/models"))
STUDENT = ROOT / "models/muse-glimmer-kjv.f16.gguf"
SMOLLM = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"

QUESTIONS = ["Who begat Enos?", "What did the LORD say unto Moses?", "Where is the land of Nod?",
             "Who was the son of Jesse?", "What is the first day?", "Tell me of the ark.",
             "Who was Pharaoh?", "Why did Cain slay Abel?"]


@pytest.fixture(scope="module")
def server():
    s = Server(SQ, "-m", str(STUDENT), "--parallel", "4", "--threads", "2")
    yield s
    assert s.stop() == 0, "".join(s.log)


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def chat(client, question, **kw):
    kw.setdefault("temperature", 0)
    kw.setdefault("max_tokens", 24)
    return client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": question}], **kw)


MODEL_ID = STUDENT.name


def sse_events(server, path, body):
    """The raw `data:` payloads of a streaming response, in order."""
    u = urllib.parse.urlparse(server.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200
    assert r.getheader("Content-Type").startswith("text/event-stream")
    text = r.read().decode()
    conn.close()
    events = [block for block in text.split("\n\n") if block]
    assert all(e.startswith("data: ") for e in events), text[:300]
    return [e[len("data: "):] for e in events]


def test_health_and_models(server, client):
    status, _, body = server.request("GET", "/health")
    assert status == 200 and body == {"status": "ok"}
    models = client.models.list().data
    assert [m.id for m in models] == [MODEL_ID]
    _, _, raw = server.request("GET", "/v1/models")
    entry = raw["data"][0]
    assert {"chat", "completion"} <= set(entry["capabilities"])
    assert entry["meta"]["architecture"] == "muse-glimmer" and entry["meta"]["n_ctx_slot"] == 256


def test_chat_usage_matches_the_tokenizer(server, client):
    r = chat(client, QUESTIONS[0], max_tokens=7)
    _, _, applied = server.request("POST", "/apply-template", {"messages": [{"role": "user", "content": QUESTIONS[0]}]})
    # The template writes BOS itself, so the rendered prompt's own tokens are the prompt.
    _, _, tok = server.request("POST", "/tokenize", {"content": applied["prompt"], "add_special": False})
    assert r.usage.prompt_tokens == len(tok["tokens"])
    assert r.choices[0].finish_reason in ("length", "stop")
    if r.choices[0].finish_reason == "length":
        assert r.usage.completion_tokens == 7
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert r.choices[0].message.role == "assistant" and r.choices[0].message.content


def test_completion_usage_and_detokenize(server, client):
    r = client.completions.create(model=MODEL_ID, prompt="In the beginning God", max_tokens=12, temperature=0)
    _, _, tok = server.request("POST", "/tokenize", {"content": "In the beginning God", "add_special": True})
    assert r.usage.prompt_tokens == len(tok["tokens"])
    assert r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 12
    _, _, ids = server.request("POST", "/tokenize", {"content": r.choices[0].text})
    _, _, back = server.request("POST", "/detokenize", {"tokens": ids["tokens"]})
    assert back["content"] == r.choices[0].text


def test_max_tokens_one(client):
    r = chat(client, QUESTIONS[1], max_tokens=1)
    assert r.usage.completion_tokens == 1
    r = client.completions.create(model=MODEL_ID, prompt="And God said", max_tokens=1, temperature=0)
    assert r.usage.completion_tokens == 1 and r.choices[0].finish_reason == "length"


def test_streaming_equals_non_streaming_and_framing(server, client):
    whole = chat(client, QUESTIONS[2], max_tokens=20).choices[0].message.content
    stream = chat(client, QUESTIONS[2], max_tokens=20, stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finish) == 1
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
    # The wire: role chunk first, [DONE] last, every event a JSON object before it.
    events = sse_events(server, "/v1/chat/completions",
                        {"messages": [{"role": "user", "content": QUESTIONS[2]}], "max_tokens": 5, "stream": True,
                         "temperature": 0})
    assert events[-1] == "[DONE]"
    objs = [json.loads(e) for e in events[:-1]]
    assert objs[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(o["object"] == "chat.completion.chunk" for o in objs)
    assert objs[-1]["choices"][0]["finish_reason"] in ("length", "stop")


def test_completion_streaming(client):
    whole = client.completions.create(model=MODEL_ID, prompt="And the earth was", max_tokens=15, temperature=0).choices[0].text
    parts = client.completions.create(model=MODEL_ID, prompt="And the earth was", max_tokens=15, temperature=0, stream=True)
    assert "".join(c.choices[0].text for c in parts if c.choices) == whole


def test_stop_strings_across_tokens(client):
    full = client.completions.create(model=MODEL_ID, prompt="In the beginning", max_tokens=40, temperature=0).choices[0].text
    # A stop that straddles a token boundary: the last 2 characters of one word, a space and
    # the first of the next, taken from the middle of the greedy text.
    words = full.split(" ")
    assert len(words) > 6, full
    at = len(" ".join(words[:4]))
    stop = full[at - 2:at + 2]
    r = client.completions.create(model=MODEL_ID, prompt="In the beginning", max_tokens=40, temperature=0, stop=[stop, "@@@"])
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == full[:full.index(stop)]
    s = client.completions.create(model=MODEL_ID, prompt="In the beginning", max_tokens=40, temperature=0, stop=stop, stream=True)
    assert "".join(c.choices[0].text for c in s if c.choices) == full[:full.index(stop)]


def test_same_seed_same_text(client):
    a = chat(client, QUESTIONS[3], temperature=1.0, seed=1234, max_tokens=30).choices[0].message.content
    b = chat(client, QUESTIONS[3], temperature=1.0, seed=1234, max_tokens=30).choices[0].message.content
    assert a == b


def test_logprobs(client):
    r = chat(client, QUESTIONS[4], max_tokens=6, logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for t in content:
        assert len(t.top_logprobs) == 3 and t.logprob <= 0
        # greedy: the chosen token is the most likely one
        assert abs(t.top_logprobs[0].logprob - t.logprob) < 1e-6
    c = client.completions.create(model=MODEL_ID, prompt="And God", max_tokens=4, temperature=0, logprobs=2)
    assert len(c.choices[0].logprobs.tokens) == 4 and all(len(t) <= 2 for t in c.choices[0].logprobs.top_logprobs)


def test_concurrent_greedy_requests_equal_alone(client):
    alone = [chat(client, q, max_tokens=32).choices[0].message.content for q in QUESTIONS]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda q: chat(client, q, max_tokens=32).choices[0].message.content, QUESTIONS))
    assert together == alone


def test_second_turn_reuses_the_prefix(client):
    first = chat(client, "Who was Noah?", max_tokens=40)
    history = [{"role": "user", "content": "Who was Noah?"},
               {"role": "assistant", "content": first.choices[0].message.content},
               {"role": "user", "content": "And his sons?"}]
    second = client.chat.completions.create(model=MODEL_ID, messages=history, max_tokens=8, temperature=0)
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached >= 64 and cached % 64 == 0 and cached < second.usage.prompt_tokens


def test_reasoning_effort_reaches_the_template(server, client):
    msgs = [{"role": "user", "content": "Hi"}]
    for effort, line in [("low", "Reasoning strength: low."), ("xhigh", "Reasoning strength: xhigh."),
                         ("none", "Reasoning strength: low."), (None, "Reasoning strength: high.")]:
        body = {"messages": msgs} if effort is None else {"messages": msgs, "reasoning_effort": effort}
        _, _, r = server.request("POST", "/apply-template", body)
        assert line in r["prompt"]
    r = chat(client, "Hi", reasoning_effort="low", max_tokens=3)
    assert r.usage.completion_tokens_details.reasoning_tokens == 0


def expect_error(server, path, body, status, raw=None, headers=None):
    code, hdrs, r = server.request("POST", path, body, raw=raw, headers=headers)
    assert code == status, r
    assert set(r["error"]) >= {"message", "type", "code"} and r["error"]["message"], r
    return hdrs, r["error"]


def test_errors_have_their_status_and_the_server_keeps_serving(server):
    msgs = [{"role": "user", "content": "Hi"}]
    expect_error(server, "/v1/chat/completions", None, 400, raw=b'{"messages": [')
    expect_error(server, "/v1/chat/completions", None, 400, raw=b"[1, 2]")
    expect_error(server, "/v1/chat/completions", None, 400, raw=b"[" * 200 + b"]" * 200)
    expect_error(server, "/v1/chat/completions", {"messages": msgs, "temperature": "hot"}, 400)
    expect_error(server, "/v1/chat/completions", {"messages": "Hi"}, 400)
    expect_error(server, "/v1/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]}, 400)
    expect_error(server, "/v1/chat/completions", {"messages": msgs, "max_tokens": 0}, 400)
    expect_error(server, "/v1/chat/completions", {"messages": msgs, "n": 17}, 400)
    expect_error(server, "/v1/chat/completions", {"messages": msgs, "stop": 5}, 400)
    expect_error(server, "/v1/chat/completions", {"messages": msgs, "top_logprobs": 2}, 400)
    expect_error(server, "/v1/chat/completions", {"messages": msgs, "response_format": {"type": "json_object"}}, 400)
    expect_error(server, "/v1/chat/completions", {"messages": msgs, "tool_choice": "required"}, 400)
    _, e = expect_error(server, "/v1/chat/completions",
                        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, 400)
    assert "image" in e["message"]
    _, e = expect_error(server, "/v1/chat/completions", {"messages": msgs, "model": "gpt-9"}, 404)
    assert "gpt-9" in e["message"]
    _, e = expect_error(server, "/v1/completions", {"prompt": "word " * 400}, 400)
    assert "more than the context of 256" in e["message"]
    expect_error(server, "/v1/completions", {"prompt": [5, 999999]}, 400)
    expect_error(server, "/v1/chat/completions", None, 413, raw=b" " * (9 << 20))
    code, _, r = server.request("GET", "/v1/nothing-here")
    assert code == 404 and "error" in r
    assert server.request("GET", "/health")[0] == 200
    assert server.proc.poll() is None


def test_api_key():
    s = Server(SQ, "-m", str(STUDENT), "--parallel", "1", "--api-key", "sekrit-key")
    try:
        assert s.request("GET", "/health")[0] == 200  # health stays public
        body = {"prompt": "And", "max_tokens": 1}
        expect_error(s, "/v1/completions", body, 401)
        expect_error(s, "/v1/completions", body, 401, headers={"Authorization": "Bearer sekrit-kez"})
        expect_error(s, "/v1/completions", body, 401, headers={"Authorization": "Bearer sekrit-key-longer"})
        code, _, _ = s.request("POST", "/v1/completions", body, headers={"Authorization": "Bearer sekrit-key"})
        assert code == 200
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="sekrit-key", max_retries=0)
        assert c.completions.create(model=MODEL_ID, prompt="And", max_tokens=2).usage.completion_tokens >= 1
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=s.url + "/v1", api_key="wrong", max_retries=0).models.list()
    finally:
        assert s.stop() == 0


def open_stream(server, body):
    """A streaming request left open: (socket, first bytes)."""
    u = urllib.parse.urlparse(server.url)
    sock = socket.create_connection((u.hostname, u.port))
    data = json.dumps(body).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: " + f"{u.hostname}:{u.port}".encode() + b"\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    first = sock.recv(4096)
    return sock, first


@pytest.mark.skipif(not SMOLLM.exists(), reason=f"{SMOLLM} not installed (scripts/get-models)")
def test_disconnect_frees_the_slot_and_full_queue_is_503():
    # SmolLM2 and 900 tokens, not the shipped student: the student ran 200 tokens between
    # two metric polls on an AVX-512 CI machine, so the slot was free before the test looked.
    s = Server(SQ, "-m", str(SMOLLM), "--parallel", "1", "--max-queue", "1", "--ctx", "1024")
    try:
        long = {"prompt": "In the beginning", "max_tokens": 900, "temperature": 0, "ignore_eos": True, "stream": True}
        sock, first = open_stream(s, long)
        assert b"200 OK" in first
        assert s.wait_for(lambda: s.metrics().get("squeeze_slots_busy") == 1)
        # The slot is busy: one request may wait, the next one is refused.
        waiting, _ = open_stream(s, long)
        assert s.wait_for(lambda: s.metrics().get("squeeze_queue_length") == 1)
        hdrs, e = expect_error(s, "/v1/completions", {"prompt": "And", "max_tokens": 1}, 503)
        assert hdrs.get("Retry-After") == "1"
        sock.close()
        waiting.close()
        assert s.wait_for(lambda: s.metrics().get("squeeze_slots_busy") == 0 and
                          s.metrics().get("squeeze_requests_cancelled_total") >= 2, timeout=30), s.metrics()
        code, _, r = s.request("POST", "/v1/completions", {"prompt": "And", "max_tokens": 2})
        assert code == 200
    finally:
        assert s.stop() == 0


@pytest.mark.skipif(not SMOLLM.exists(), reason=f"{SMOLLM} not installed (scripts/get-models)")
def test_sigterm_finishes_running_requests():
    # SmolLM2, not the shipped student: the student decodes ~3000 tokens/s on an AVX-512
    # core, so both requests could end between two polls and SIGTERM would test nothing.
    s = Server(SQ, "-m", str(SMOLLM), "--parallel", "2", "--ctx", "512")
    c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300)
    model = c.models.list().data[0].id
    streamed = lambda: list(c.completions.create(model=model, prompt="And God said", max_tokens=100, temperature=0,
                                                 stream=True, extra_body={"ignore_eos": True}))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        fut = pool.submit(lambda: c.completions.create(model=model, prompt="In the beginning", max_tokens=120,
                                                       temperature=0, extra_body={"ignore_eos": True}))
        fut_stream = pool.submit(streamed)
        assert s.wait_for(lambda: s.metrics().get("squeeze_slots_busy") == 2)
        s.proc.terminate()
        r = fut.result(timeout=120)
        chunks = fut_stream.result(timeout=120)
    assert r.usage.completion_tokens == 120 and r.choices[0].finish_reason == "length"
    assert chunks[-1].choices[0].finish_reason == "length"  # the stream ran to its end too
    assert s.proc.wait(60) == 0
    assert any("stopped" in line for line in s.log)


def test_n_choices_equal_seeded_single_requests_over_one_prefill(server, client):
    """n = 3 gives the texts of three single requests seeded seed, seed + 1, seed + 2, in
    order, streamed or not; the prompt runs once: the other two choices copy its K/V (all
    but the last, partial chunk of 64), which /metrics counts as cached prompt tokens."""
    prompt = " ".join(QUESTIONS * 3) + " And the answer to all of these:"
    kw = dict(model=MODEL_ID, prompt=prompt, temperature=0.9, max_tokens=16)
    cached = lambda: server.metrics()["squeeze_prompt_tokens_cached_total"]
    before = cached()
    r = client.completions.create(n=3, seed=41, **kw)
    shared = cached() - before
    assert [c.index for c in r.choices] == [0, 1, 2]
    n_prompt = r.usage.prompt_tokens
    assert n_prompt > 128 and shared >= 2 * ((n_prompt - 1) // 64 * 64), (n_prompt, shared)
    assert r.usage.completion_tokens == 3 * 16
    texts = [c.text for c in r.choices]
    singles = [client.completions.create(n=1, seed=41 + i, **kw).choices[0].text for i in range(3)]
    assert texts == singles
    streamed, usage = ["", "", ""], []
    for chunk in client.completions.create(n=3, seed=41, stream=True, stream_options={"include_usage": True}, **kw):
        for c in chunk.choices:
            streamed[c.index] += c.text
        if chunk.usage:
            usage.append(chunk.usage)
    assert streamed == texts
    assert len(usage) == 1 and usage[0].completion_tokens == 48
    chats = chat(client, "Tell me of the ark.", n=2, seed=9, temperature=0.9)
    assert [c.message.content for c in chats.choices] == [
        chat(client, "Tell me of the ark.", seed=9 + i, temperature=0.9).choices[0].message.content for i in range(2)]


def test_embeddings_of_the_student(server, client):
    """/v1/embeddings: one unit vector of the model's width per input, batched equal to
    single (tests/python/test_server_embeddings.py compares SmolLM2's with llama.cpp's)."""
    r = client.embeddings.create(model=MODEL_ID, input=QUESTIONS[:3])
    width = server.request("GET", "/v1/models")[2]["data"][0]["meta"]["n_embd"]
    assert [len(d.embedding) for d in r.data] == [width] * 3
    assert all(abs(sum(x * x for x in d.embedding) - 1) < 1e-4 for d in r.data)
    assert client.embeddings.create(model=MODEL_ID, input=QUESTIONS[1]).data[0].embedding == r.data[1].embedding
    code, _, e = server.request("POST", "/v1/embeddings", {"input": "x", "pooling": "max"})
    assert code == 400 and e["error"]["param"] == "pooling"


def test_a_grammar_without_an_end_token_stops_where_the_value_closes(server):
    """llama-server's json_schema on completions with ignore_eos (no end-of-sequence token):
    once the value is complete and nothing may follow, the answer ends there — never a
    sampler with nothing to sample (which once took the scheduler down)."""
    for schema in [{"type": "integer", "minimum": 0, "maximum": 5}, {"enum": ["yes", "no", "never"]}]:
        code, _, r = server.request("POST", "/v1/completions", {"prompt": "In the beginning", "max_tokens": 64,
                                                                 "ignore_eos": True, "json_schema": schema})
        assert code == 200, r
        assert r["choices"][0]["finish_reason"] == "stop", r
        assert json.loads(r["choices"][0]["text"]) in ([0, 1, 2, 3, 4, 5] if "type" in schema else schema["enum"]), r
    assert server.request("GET", "/health")[0] == 200


def test_response_format_needs_an_answer_in_plain_text(client):
    """The student frames its answer with control tokens, which a JSON grammar would forbid."""
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, "Who begat Enos?", response_format={"type": "json_object"})
    assert "control tokens" in str(e.value) and e.value.body.get("param") == "response_format"
    with pytest.raises(openai.BadRequestError) as e:  # a keyword it cannot enforce, named
        chat(client, "x", response_format={"type": "json_schema", "json_schema": {
            "name": "a", "schema": {"type": "string", "format": "email"}}})
    assert "'format' 'email'" in str(e.value)


def test_a_port_in_use_is_refused(server):
    """A second server on a port the first holds must fail at once (SO_REUSEPORT would let both
    bind, and the kernel would split the connections between them)."""
    import subprocess
    port = str(server.url.rsplit(":", 1)[1])
    p = subprocess.run([SQ, "serve", "-m", str(STUDENT), "--port", port], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode != 0
    assert "cannot listen" in p.stderr and port in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert server.request("GET", "/health")[0] == 200  # the first server is unharmed


def test_bad_model_file_is_one_line_error(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 10)
    import subprocess
    p = subprocess.run([SQ, "serve", "-m", str(bad), "--port", "0"], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert len(p.stderr.strip().splitlines()) <= 2 and "bad.gguf" in p.stderr


@pytest.mark.skipif(not SMOLLM.exists(), reason=f"{SMOLLM} not installed (scripts/get-models)")
def test_smollm2_chat_and_concurrency():
    s = Server(SQ, "-m", str(SMOLLM), "--parallel", "4", "--ctx", "1024")
    try:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300)
        ask = lambda q: c.chat.completions.create(model=SMOLLM.name, messages=[{"role": "user", "content": q}],
                                                  max_tokens=16, temperature=0).choices[0].message.content
        qs = ["What is the capital of France?", "Name a color.", "What is 2+2?", "Say hello."]
        alone = [ask(q) for q in qs]
        assert all(alone), alone
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            assert list(pool.map(ask, qs)) == alone
        # A schema-constrained answer (tests/python/test_server_schema.py has 200 more).
        schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                   "people": {"type": "integer", "minimum": 0, "maximum": 10**9}},
                  "required": ["city", "people"]}
        r = c.chat.completions.create(model=SMOLLM.name, messages=[{"role": "user", "content": "A big city, as JSON."}],
                                      response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": schema}},
                                      max_tokens=100, temperature=0.7, seed=5)
        assert r.choices[0].finish_reason == "stop"
        jsonschema.validate(json.loads(r.choices[0].message.content), schema)
    finally:
        assert s.stop() == 0


@pytest.mark.skipif(find_chromium() is None, reason="no chromium (scripts/test installs Debian's)")
def test_chat_page_in_headless_chromium(server):
    """The page at / as a user drives it: type, press Enter, watch the answer stream in."""
    browser = Browser(find_chromium())
    try:
        assert browser.goto(server.url + "/", "document.getElementById('model')?.textContent.endsWith('.gguf')")
        browser.evaluate("document.getElementById('effort').value = 'low'")
        browser.evaluate("document.getElementById('max').value = '40'")  # two turns fit the 256-token context
        browser.evaluate("""(() => { const i = document.getElementById('input'); i.value = 'Who begat Enos?';
                            i.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); })()""")
        assert browser.wait("document.querySelector('.msg.assistant')?.dataset.done === '1'", timeout=120), \
            browser.evaluate("document.getElementById('log').innerText")
        user = browser.evaluate("document.querySelector('.msg.user').textContent")
        answer = browser.evaluate("document.querySelector('.msg.assistant .content').textContent")
        stats = browser.evaluate("document.querySelector('.msg.assistant .stats').textContent")
        assert user == "Who begat Enos?"
        assert answer.strip(), "no answer rendered"
        assert re.match(r"\d+ tokens · [\d.]+ tokens/s · first token [\d.]+ s · (stop|length)$", stats), stats
        # A second turn goes out with the first one as history.
        browser.evaluate("""(() => { const i = document.getElementById('input'); i.value = 'And then?';
                            document.getElementById('send').click(); })()""")
        assert browser.wait("document.querySelectorAll('.msg.assistant')[1]?.dataset.done === '1'", timeout=120)
    finally:
        browser.close()

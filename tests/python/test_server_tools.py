"""tool_choice through the server: "required" and a named function force a call, written in
the model's framing, whose arguments validate against the tool's parameters (checked by the
independent `jsonschema` package) — on a random-weight Qwen3-MoE model whose vocabulary has
Qwen's text tags (`squeeze make-model --text-tags`) and Qwen3's chat template, so only the
grammar can make its output a call. Also: what tool_choice refuses, and the warning when a
template drops the tools."""
import concurrent.futures
import json
import os
import pathlib
import subprocess

import jsonschema
import openai
import pytest

from serve_util import Server

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQ = os.environ.get("SQUEEZE_BIN", str(ROOT / "build/release/tools/squeeze"))
QWEN3_TEMPLATE = ROOT / "tests/fixtures/chat_templates/qwen3.jinja"

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "days": {"type": "integer", "minimum": 1, "maximum": 7},
                                            "unit": {"enum": ["C", "F"]}}, "required": ["city", "days"]}
ADD = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "add", "description": "Sum", "parameters": ADD}}]
PARAMS = {"get_weather": WEATHER, "add": ADD}


@pytest.fixture(scope="module")
def tagged(tmp_path_factory):
    model = tmp_path_factory.mktemp("tagged") / "qwen3moe-tags.gguf"
    subprocess.run([SQ, "make-model", "--config", "qwen3moe-tiny", "--ctx", "4096", "--text-tags", "--chat-template",
                    str(QWEN3_TEMPLATE), "-o", str(model)], check=True, capture_output=True)
    s = Server(SQ, "-m", str(model), "--parallel", "4", "--ctx", "2048")
    try:
        yield openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=300), model.name
    finally:
        assert s.stop() == 0, "".join(s.log)


def call(client, name, tool_choice, seed, **kw):
    return client.chat.completions.create(
        model=name, messages=[{"role": "user", "content": "What is the weather in Paris?"}], tools=TOOLS,
        tool_choice=tool_choice, max_tokens=400, seed=seed, temperature=1.0, **kw)


def test_required_and_named_always_give_a_valid_call(tagged):
    client, name = tagged
    jobs = [("required", s) for s in range(16)] + [({"type": "function", "function": {"name": "add"}}, s) for s in range(8)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda j: (j, call(client, name, j[0], j[1],
                                                   extra_body={"thinking_budget": 0})), jobs))
    seen = set()
    for (choice, seed), r in results:
        c = r.choices[0]
        assert c.finish_reason == "tool_calls", (choice, seed, c.message.content)
        assert len(c.message.tool_calls) == 1, c.message
        fn = c.message.tool_calls[0].function
        if choice != "required":
            assert fn.name == "add"
        seen.add(fn.name)
        jsonschema.validate(json.loads(fn.arguments), PARAMS[fn.name])
    assert seen == {"get_weather", "add"}  # "required" leaves the choice of tool to the model


def test_a_thinking_turn_then_the_forced_call(tagged):
    """With thinking on, the grammar starts after the thinking (which the budget closes)."""
    client, name = tagged
    r = call(client, name, "required", 3, extra_body={"thinking_budget": 8})
    c = r.choices[0]
    assert c.finish_reason == "tool_calls", c.message
    jsonschema.validate(json.loads(c.message.tool_calls[0].function.arguments), PARAMS[c.message.tool_calls[0].function.name])


def test_what_tool_choice_refuses(tagged):
    client, name = tagged
    for choice, words in [({"type": "function", "function": {"name": "nope"}}, "'nope'"), ("sometimes", "sometimes"),
                          ({"type": "function"}, "tool_choice")]:
        with pytest.raises(openai.BadRequestError) as e:
            call(client, name, choice, 0)
        assert words in str(e.value) and e.value.body.get("param") == "tool_choice", str(e.value)
    with pytest.raises(openai.BadRequestError) as e:  # a parameters keyword the grammar cannot enforce
        client.chat.completions.create(model=name, messages=[{"role": "user", "content": "x"}], tool_choice="required",
                                       tools=[{"type": "function", "function": {"name": "f", "parameters": {
                                           "type": "object", "properties": {"s": {"type": "string", "format": "email"}}}}}])
    assert "'format' 'email'" in str(e.value)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=name, messages=[{"role": "user", "content": "x"}], tool_choice="required")
    assert "needs 'tools'" in str(e.value)


def test_a_template_that_drops_tools_is_named_in_a_warning(tmp_path):
    """A template that never prints `tools` (SmolLM2's is one): the answer says they were
    dropped instead of dropping them silently, and a forced call is refused."""
    template = tmp_path / "no-tools.jinja"
    template.write_text("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                        "{% if add_generation_prompt %}assistant: {% endif %}")
    model = tmp_path / "no-tools.gguf"
    subprocess.run([SQ, "make-model", "--config", "qwen3moe-tiny", "--text-tags", "--chat-template", str(template),
                    "-o", str(model)], check=True, capture_output=True)
    s = Server(SQ, "-m", str(model), "--parallel", "1")
    try:
        code, _, r = s.request("POST", "/v1/chat/completions", {
            "messages": [{"role": "user", "content": "Hi"}], "tools": TOOLS, "max_tokens": 4})
        assert code == 200, r
        assert any("'tools'" in w and "dropped" in w for w in r.get("warnings", [])), r
        code, _, r = s.request("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                                "tools": TOOLS, "tool_choice": "required"})
        assert code == 400 and r["error"]["param"] == "tool_choice", r
        code, _, r = s.request("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                                                "max_tokens": 4})
        assert code == 200 and "warnings" not in r, r
    finally:
        assert s.stop() == 0

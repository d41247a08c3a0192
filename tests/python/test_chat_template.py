"""tests/python/test_chat_template.py — `squeeze template` against Python's jinja2,
configured as Hugging Face transformers configures it for apply_chat_template:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[loopcontrols]), tojson replaced by json.dumps(ensure_ascii=False, ...),
and the globals raise_exception and strftime_now.

Every committed template under tests/fixtures/chat_templates/ renders every
conversation below (with and without the generation prompt) byte for byte as jinja2
does; where jinja2 raises (e.g. Gemma's role alternation check), squeeze must fail with
one line on stderr. GGUF files under build/models/ (or $SQUEEZE_MODELS) are rendered
from their embedded tokenizer.chat_template too, when present.

gpt-oss (harmony): tests/fixtures/chat_templates/gpt-oss.jinja is OpenAI's published
template (llama.cpp's models/templates/openai-gpt-oss-120b.jinja, unchanged); the
harmony_* conversations cover what it renders (reasoning_effort, developer instructions,
TypeScript-like tool namespaces, `thinking`, calls and results).

Muse Glimmer: tests/fixtures/chat_templates/muse-glimmer.jinja is written here from the
documented format. The released template is never committed; where a llama.cpp source
tree is given ($SQUEEZE_LLAMA_CPP_DIR: llama.cpp itself, or an unpacked llama-cpp-python
sdist holding it under vendor/llama.cpp), the optional tests render it too, through
squeeze against jinja2, and require ours to render every conversation as it does.
"""
import datetime
import glob
import json
import os
import subprocess

import pytest

jinja2 = pytest.importorskip("jinja2")
from jinja2.ext import loopcontrols  # noqa: E402
from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402

SQ = os.environ.get("SQUEEZE_BIN", "build/release/tools/squeeze")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "chat_templates")
NOW = 1721952000  # 26 Jul 2024 00:00 UTC: strftime_now's fixed clock on both sides
BOS, EOS = "<bos>", "<eos>"


def reference_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW, datetime.timezone.utc).strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = reference_env()

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city <b>& more</b>.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 14.5},
            },
            "required": ["city"],
        },
    },
}

# Tools with a namespace (the part of the name before the first dot), the way Muse
# Glimmer's system block groups them.
READ_TOOL = {"type": "function", "function": {
    "name": "files.read", "description": "Read a text file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                   "required": ["path"]}}}
WRITE_TOOL = {"name": "files.write", "description": "Write a text file.", "parameters": {  # bare, no "function"
    "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"},
                                     "append": {"type": "boolean"}}}}
MUSE_CONTEXT = {"tool_namespace_descriptions": {"files": "The sandbox's file system."}}

# gpt-oss renders tool schemas as TypeScript types: every branch of its render_typescript_type
# (typed arrays, arrays of objects, nullable, type lists, oneOf with and without objects,
# defaults with and without enums, nested objects, untyped parameters), and tools without
# parameters.
FLIGHT_TOOL = {"type": "function", "function": {
    "name": "search_flights", "description": "Find flights between two airports.",
    "parameters": {"type": "object", "required": ["origin", "destination"], "properties": {
        "origin": {"type": "string", "description": "IATA code, e.g. \"CDG\""},
        "destination": {"type": "string"},
        "cabin": {"type": "string", "enum": ["economy", "business", "first"], "default": "economy"},
        "passengers": {"type": "integer", "description": "Adults.", "default": 1},
        "max_price": {"type": "number", "default": 99.5},
        "direct_only": {"type": "boolean", "default": False},
        "note": {"type": "string", "nullable": True},
        "dates": {"type": "array", "items": {"type": "string"}},
        "scores": {"type": "array", "items": {"type": "number"}, "nullable": True},
        "counts": {"type": "array", "items": {"type": "integer"}},
        "flags": {"type": "array", "items": {"type": "boolean"}},
        "ids": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        "legs": {"type": "array", "items": {"type": "object", "required": ["from", "to"], "properties": {
            "from": {"type": "string"}, "to": {"type": "string"}, "stops": {"type": "integer"}}}},
        "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        "tags": {"type": "array"},
        "anything": {"description": "Free-form."},
        "filters": {"type": "object", "required": ["airline"], "properties": {
            "airline": {"type": "string", "nullable": True},
            "alliances": {"type": "array", "items": {"type": "string"}},
            "window": {"type": "object", "required": ["start"], "properties": {
                "start": {"type": "string"}, "end": {"type": "string"}}}}},
        "meta": {"type": "object"},
        "sort": {"oneOf": [{"type": "string", "enum": ["price", "duration"], "description": "a field"},
                           {"type": "integer", "default": 0}], "default": "price"},
        "payload": {"oneOf": [{"type": "object"}, {"type": "string"}]},
        "union": {"type": ["string", "number"]},
        "single": {"type": ["integer"]},
    }}}}
CLOCK_TOOL = {"type": "function", "function": {"name": "get_time", "description": "The current time.",
                                                "parameters": {"type": "object", "properties": {}}}}
PING_TOOL = {"type": "function", "function": {"name": "ping", "description": "", "parameters": {}}}

CONVERSATIONS = {
    "single_user": {"messages": [{"role": "user", "content": "Hello!"}]},
    "multi_turn_system": {"messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3+3?\n"},
    ]},
    "multi_turn_no_system": {"messages": [
        {"role": "user", "content": "  padded question  "},
        {"role": "assistant", "content": "\nanswer with newlines\n\n"},
        {"role": "user", "content": "thanks"},
    ]},
    "unicode": {"messages": [
        {"role": "system", "content": "Réponds en français — «toujours»."},
        {"role": "user", "content": "日本語 🙂 \"quotes\" 'single' <tag> & \\ back\\slash \t tab"},
        {"role": "assistant", "content": "Ça va 👍"},
        {"role": "user", "content": "Ünïcödé"},
    ]},
    "empty_content": {"messages": [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "x"},
    ]},
    "content_parts": {"messages": [
        {"role": "system", "content": [{"type": "text", "text": "System in parts."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "  Describe this.  "}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        {"role": "user", "content": [{"type": "text", "text": "More?"}]},
    ]},
    "bad_alternation": {"messages": [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
    ]},
    "tool_call": {"tools": [WEATHER_TOOL], "messages": [
        {"role": "system", "content": "Use tools when useful."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 2}}}]},
        {"role": "tool", "content": "{\"temp\": 18.5, \"sky\": \"cloudy\"}"},
        {"role": "assistant", "content": "It is 18.5 °C and cloudy."},
    ]},
    "parallel_tool_calls": {"tools": [WEATHER_TOOL], "messages": [
        {"role": "user", "content": "Paris and Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo", "x": [1, 2.0, None, True]}}},
        ]},
        {"role": "tool", "content": "18"},
        {"role": "tool", "content": "-3"},
    ]},
    "tools_without_calls": {"tools": [WEATHER_TOOL], "messages": [{"role": "user", "content": "Hi"}]},
    # Muse Glimmer's cases (every template renders them; the others ignore what they do not know).
    "mg_system_effort_text": {"messages": [
        {"role": "system", "content": "You are terse.\nReasoning effort: low"},
        {"role": "user", "content": "Why is the sky blue?"},
    ]},
    "mg_effort_variable": {"context": {"reasoning_strength": "xhigh", "knowledge_cutoff": "2025-11-30",
                                       "current_date": "2026-09-01"}, "messages": [
        {"role": "user", "content": "Prove that sqrt(2) is irrational."},
    ]},
    "mg_system_effort_variable": {"context": {"reasoning_strength": "medium"}, "messages": [
        {"role": "system", "content": [{"type": "text", "text": "Answer in French."}]},
        {"role": "user", "content": "Bonjour"},
        {"role": "assistant", "content": "Bonjour !"},
        {"role": "user", "content": "Ça va ?"},
    ]},
    "mg_reasoning_history": {"messages": [
        {"role": "user", "content": "What is 17 * 23?"},
        {"role": "assistant", "reasoning_content": "17 * 23 = 17 * 20 + 17 * 3 = 340 + 51 = 391.", "content": "391"},
        {"role": "user", "content": "And 391 / 17?"},
        {"role": "assistant", "reasoning_content": "", "content": "23"},
        {"role": "user", "content": "Thanks"},
    ]},
    "mg_tools_and_results": {"tools": [WEATHER_TOOL, READ_TOOL, WRITE_TOOL], "context": MUSE_CONTEXT, "messages": [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "Save Paris's weather to /tmp/w.txt"},
        {"role": "assistant", "reasoning_content": "I need the weather first.", "content": None, "tool_calls": [
            {"id": "call_w", "type": "function", "function": {
                "name": "get_weather", "arguments": {"city": "Paris", "days": 2, "unit": "celsius"}}}]},
        {"role": "tool", "tool_call_id": "call_w", "content": "{\"temp\": 18.5}"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "files.write", "arguments": {
                "path": "/tmp/w.txt", "content": "18.5 \"C\"\n  indented <b>\n", "append": False,
                "mode": None, "tags": ["a", 1, 2.5, True], "meta": {"k": [None]}, "ratio": 0.25}}},
            {"id": "call_b", "type": "function", "function": {"name": "files.read", "arguments": {"path": "/tmp/w.txt"}}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "ok"},
        {"role": "tool", "name": "files.read", "content": [{"type": "text", "text": "18.5 \"C\""}]},
        {"role": "tool", "tool_call_id": "call_unknown", "content": "orphan"},
        {"role": "tool", "content": "anonymous"},
        {"role": "assistant", "content": "Saved: 18.5 °C."},
    ]},
    "mg_answer_then_call": {"tools": [READ_TOOL], "messages": [
        {"role": "user", "content": "Read /etc/hostname"},
        {"role": "assistant", "content": "Reading it now."},
        {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "files.read", "arguments": {"path": "/etc/hostname", "limit": 1}}}]},
        {"role": "assistant", "content": "(still waiting)"},
        {"role": "assistant", "recipient": "self", "content": "Note to self."},
        {"role": "assistant", "content": "Explicitly open turn.", "end_turn": False},
    ]},
    "mg_images": {"messages": [
        {"role": "system", "content": "REASONING EFFORT: HIGH. Describe images."},
        {"role": "user", "content": [{"type": "text", "text": "Compare "}, {"type": "image"},
                                     {"type": "text", "text": " and "}, {"type": "image", "url": "b.png"},
                                     {"type": "video"}, {"type": "audio"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Both show cats."}]},
    ]},
    "mg_string_arguments": {"tools": [READ_TOOL], "messages": [
        {"role": "user", "content": "Read it"},
        {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "files.read", "arguments": "{\"path\": \"/x\"}"}}]},
    ]},
    # Qwen3 / Qwen3.5: thinking switched off by the caller, a past answer whose content still
    # holds its <think> block, and tool results after a call (rendered inside user turns).
    "qwen_no_thinking": {"context": {"enable_thinking": False}, "messages": [
        {"role": "user", "content": "What is 2+2?"},
    ]},
    "qwen_think_in_content": {"tools": [WEATHER_TOOL], "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "<think>\nNeed the tool.\n</think>\n\n", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "18"},
        {"role": "assistant", "content": "<think>\nIt said 18.\n</think>\n\nIt is 18 °C."},
        {"role": "user", "content": "Thanks"},
    ]},
    # gpt-oss (harmony): the system message's reasoning level, the developer message's
    # instructions and TypeScript-like tool namespace, the `thinking` field (kept only before
    # a tool call that no final answer follows yet, or on a last assistant turn rendered for
    # training), one call per assistant message, results as JSON strings.
    "harmony_instructions_low": {"context": {"reasoning_effort": "low"}, "messages": [
        {"role": "system", "content": "You are a travel agent.\nBe brief."},
        {"role": "user", "content": "Cheapest way to Lyon?"},
    ]},
    "harmony_tools_high": {"tools": [FLIGHT_TOOL, WEATHER_TOOL, CLOCK_TOOL, PING_TOOL],
                           "context": {"reasoning_effort": "high"}, "messages": [
        {"role": "developer", "content": "Use the tools."},
        {"role": "user", "content": "Flights CDG to JFK?"},
    ]},
    "harmony_call_pending": {"tools": [WEATHER_TOOL], "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "thinking": "Need the tool: get_weather(city=Paris).", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 2}}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 18.5, \"sky\": \"cloudy \\\"grey\\\"\"}"},
    ]},
    "harmony_call_answered": {"tools": [WEATHER_TOOL], "context": {"reasoning_effort": "medium"}, "messages": [
        {"role": "system", "content": "Answer in one line."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "thinking": "Call the tool.", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "18 °C"},
        {"role": "assistant", "thinking": "It said 18 °C.", "content": "It is 18 °C in Paris."},
    ]},
    "harmony_reasoning_history": {"messages": [
        {"role": "user", "content": "What is 17 * 23?"},
        {"role": "assistant", "thinking": "17 * 20 + 17 * 3 = 391.", "content": "391"},
        {"role": "user", "content": "And 391 / 17?"},
        {"role": "assistant", "thinking": "Back to 23.", "content": "23"},
    ]},
    "harmony_builtin_tools": {"context": {"builtin_tools": ["browser", "python"], "model_identity": "You are Squeeze.",
                                          "reasoning_effort": "low"}, "messages": [
        {"role": "user", "content": "Search the web for squeeze."},
    ]},
    "harmony_channel_in_content": {"messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<|channel|>final<|message|>Hello"},
        {"role": "user", "content": "Again"},
    ]},
    # Llama 3.1: tools in the system message instead of the first user message, a fixed date.
    "llama_tools_in_system": {"tools": [WEATHER_TOOL], "context": {"tools_in_user_message": False,
                                                                  "date_string": "01 Jun 2026"}, "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "ipython", "content": "{\"temp\": 18}"},
    ]},
}

TEMPLATES = sorted(glob.glob(os.path.join(FIXTURES, "*.jinja")))


def context_for(conv, add_generation_prompt, bos=BOS, eos=EOS):
    # What transformers' apply_chat_template passes to render(), then the caller's extra
    # keyword arguments (apply_chat_template(..., reasoning_strength="low")).
    return {
        "messages": conv["messages"],
        "tools": conv.get("tools"),
        "documents": None,
        "add_generation_prompt": add_generation_prompt,
        "bos_token": bos,
        "eos_token": eos,
        **conv.get("context", {}),
    }


def reference(source, context):
    try:
        return True, ENV.from_string(source).render(**context)
    except Exception as e:  # noqa: BLE001 — any failure must be a failure on our side too
        return False, f"{type(e).__name__}: {e}"


def run_squeeze(args, tmp_path, conv, add_generation_prompt):
    msg = tmp_path / "messages.json"
    msg.write_text(json.dumps(conv, ensure_ascii=False), encoding="utf-8")
    cmd = [SQ, "template", *args, "--messages", str(msg), "--now", str(NOW)]
    if "context" in conv:
        extra = tmp_path / "context.json"
        extra.write_text(json.dumps(conv["context"], ensure_ascii=False), encoding="utf-8")
        cmd += ["--context", str(extra)]
    if add_generation_prompt:
        cmd.append("--add-generation-prompt")
    return subprocess.run(cmd, capture_output=True, timeout=60)


def check_same(ok, expected, r):
    if ok:
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout.decode("utf-8") == expected
    else:
        assert r.returncode != 0, f"jinja2 failed ({expected}) but squeeze printed {r.stdout!r}"
        lines = r.stderr.decode().strip().splitlines()
        assert len(lines) == 1, r.stderr


def test_fixtures_present():
    names = {os.path.basename(t) for t in TEMPLATES}
    assert {"smollm2-chatml.jinja", "gemma-3-it.jinja", "llama-3.2-instruct.jinja", "qwen2.5-instruct.jinja",
            "muse-glimmer.jinja", "qwen3.jinja", "qwen3.5.jinja", "llama-3.1-instruct.jinja", "gpt-oss.jinja"} <= names


@pytest.mark.parametrize("add_generation_prompt", [False, True])
@pytest.mark.parametrize("conv_name", sorted(CONVERSATIONS))
@pytest.mark.parametrize("template", TEMPLATES, ids=os.path.basename)
def test_template_matches_jinja2(template, conv_name, add_generation_prompt, tmp_path):
    source = open(template, encoding="utf-8").read()
    conv = CONVERSATIONS[conv_name]
    ok, expected = reference(source, context_for(conv, add_generation_prompt))
    r = run_squeeze(["--template-file", template, "--bos", BOS, "--eos", EOS], tmp_path, conv, add_generation_prompt)
    check_same(ok, expected, r)


def test_the_reference_is_not_vacuous():
    # The comparisons above mean something only if the templates really render these
    # conversations differently and some of them fail: spot-check both.
    gemma = open(os.path.join(FIXTURES, "gemma-3-it.jinja"), encoding="utf-8").read()
    ok, text = reference(gemma, context_for(CONVERSATIONS["multi_turn_system"], True))
    assert ok and text.startswith(BOS + "<start_of_turn>user\nYou are terse.\n\nWhat is 2+2?<end_of_turn>\n")
    assert text.endswith("<start_of_turn>model\n")
    ok, text = reference(gemma, context_for(CONVERSATIONS["bad_alternation"], False))
    assert not ok and "alternate" in text
    qwen = open(os.path.join(FIXTURES, "qwen2.5-instruct.jinja"), encoding="utf-8").read()
    ok, text = reference(qwen, context_for(CONVERSATIONS["tool_call"], False))
    assert ok and '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 2}}' in text


def test_muse_glimmer_renders_the_format():
    # Spot checks of the written template on the format's landmarks.
    mg = open(os.path.join(FIXTURES, "muse-glimmer.jinja"), encoding="utf-8").read()
    ok, text = reference(mg, context_for(CONVERSATIONS["mg_tools_and_results"], True))
    assert ok and text.startswith(BOS + "<|start|>system<|message|>Use the tools.\n\nReasoning strength: high.\n\n")
    assert '{"name": "files", "description": "The sandbox\'s file system."}\n' in text
    assert '# Valid recipients: "self", "get_weather.*", "files.*", "user".<|eot|>' in text
    assert ("<|start|>assistant to=self<|message|>I need the weather first.<|eom|>"
            "<|start|>assistant to=get_weather<|message|><atem:function_calls>\n<atem:invoke name=\"get_weather\">\n"
            "<atem:parameter name=\"city\">Paris</atem:parameter>\n<atem:parameter name=\"days\">2</atem:parameter>\n") in text
    assert ('<atem:parameter name="append">false</atem:parameter>\n<atem:parameter name="mode">null</atem:parameter>\n'
            '<atem:parameter name="tags">["a", 1, 2.5, true]</atem:parameter>\n') in text
    assert "</atem:function_calls><|eom|><|start|>assistant to=files.read<|message|>" in text
    assert '<|start|>tool get_weather<|message|><tool_output name="get_weather">\n{"temp": 18.5}\n</tool_output><|eot|>' in text
    assert "<|start|>tool call_unknown<|message|>" in text and "<|start|>tool <|message|>" in text
    assert text.endswith("<|start|>assistant to=user<|message|>Saved: 18.5 °C.<|eot|><|start|>assistant")
    ok, text = reference(mg, context_for(CONVERSATIONS["mg_system_effort_text"], False))
    assert ok and "<|message|>You are terse.\nReasoning strength: low\n\n# Valid recipients: \"self\", \"user\".<|eot|>" in text
    ok, text = reference(mg, context_for(CONVERSATIONS["mg_effort_variable"], False))
    assert ok and ("Knowledge cutoff: 2025-11-30.\nCurrent date: 2026-09-01.\n\nReasoning strength: xhigh.\n\n"
                   "# Valid recipients") in text
    ok, text = reference(mg, context_for(CONVERSATIONS["mg_images"], False))
    assert ok and "<|start|>user<|message|>Compare <|patch|> and <|patch|><|video|><|eot|>" in text
    # An answer ends its turn (<|eot|>) unless told otherwise (end_turn), even before a call;
    # tool calls end with <|eom|> while the assistant speaks next.
    ok, text = reference(mg, context_for(CONVERSATIONS["mg_answer_then_call"], False))
    assert ok and text.endswith("<|start|>assistant to=user<|message|>Reading it now.<|eot|>"
                                "<|start|>assistant to=files.read<|message|><atem:function_calls>\n"
                                "<atem:invoke name=\"files.read\">\n<atem:parameter name=\"path\">/etc/hostname"
                                "</atem:parameter>\n<atem:parameter name=\"limit\">1</atem:parameter>\n</atem:invoke>\n"
                                "</atem:function_calls><|eom|><|start|>assistant to=user<|message|>(still waiting)<|eot|>"
                                "<|start|>assistant to=self<|message|>Note to self.<|eom|>"
                                "<|start|>assistant to=user<|message|>Explicitly open turn.<|eom|>")
    ok, text = reference(mg, context_for(CONVERSATIONS["mg_string_arguments"], False))
    assert not ok and "must be an object" in text


def test_gpt_oss_renders_the_format():
    # Spot checks of gpt-oss's published template (harmony) on the format's landmarks, so that
    # the byte-for-byte comparison above compares something.
    oss = open(os.path.join(FIXTURES, "gpt-oss.jinja"), encoding="utf-8").read()
    ok, text = reference(oss, context_for(CONVERSATIONS["single_user"], True))
    assert ok and text.startswith("<|start|>system<|message|>You are ChatGPT, a large language model trained by "
                                  "OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: 2024-07-26\n\nReasoning: medium\n\n"
                                  "# Valid channels: analysis, commentary, final. Channel must be included for every "
                                  "message.<|end|><|start|>user<|message|>Hello!<|end|>")
    assert text.endswith("<|end|><|start|>assistant")
    ok, text = reference(oss, context_for(CONVERSATIONS["harmony_instructions_low"], True))
    assert ok and "Reasoning: low\n\n" in text
    assert "<|start|>developer<|message|># Instructions\n\nYou are a travel agent.\nBe brief.\n\n<|end|>" in text
    ok, text = reference(oss, context_for(CONVERSATIONS["harmony_tools_high"], False))
    assert ok and "Reasoning: high\n\n" in text
    assert "\nCalls to these tools must go to the commentary channel: 'functions'.<|end|>" in text
    assert ("# Tools\n\n## functions\n\nnamespace functions {\n\n// Find flights between two airports.\n"
            "type search_flights = (_: {\n// IATA code, e.g. \"CDG\"\norigin: string,\ndestination: string,\n"
            "cabin?: \"economy\" | \"business\" | \"first\", // default: economy,\n") in text
    assert "dates?: string[],\nscores?: number[] | null,\n" in text and "// The current time.\ntype get_time = () => any;" in text
    ok, text = reference(oss, context_for(CONVERSATIONS["harmony_call_pending"], True))
    assert ok and ("<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant<|channel|>analysis<|message|>"
                   "Need the tool: get_weather(city=Paris).<|end|><|start|>assistant to=functions.get_weather"
                   "<|channel|>commentary json<|message|>{\"city\": \"Paris\", \"unit\": \"celsius\", \"days\": 2}"
                   "<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"{\\\"temp") in text
    # A call's analysis is dropped once a final answer follows it; the last turn's thinking is
    # rendered (with <|return|>) only without the generation prompt.
    ok, text = reference(oss, context_for(CONVERSATIONS["harmony_call_answered"], False))
    assert ok and "Call the tool." not in text
    assert text.endswith("<|start|>assistant<|channel|>analysis<|message|>It said 18 °C.<|end|>"
                         "<|start|>assistant<|channel|>final<|message|>It is 18 °C in Paris.<|return|>")
    ok, text = reference(oss, context_for(CONVERSATIONS["harmony_reasoning_history"], True))
    assert ok and "17 * 20" not in text and "Back to 23." not in text
    ok, text = reference(oss, context_for(CONVERSATIONS["harmony_channel_in_content"], True))
    assert not ok and "<|channel|> tags in the content field" in text


def test_gpt_oss_fixture_is_the_published_template():
    # tests/fixtures/chat_templates/gpt-oss.jinja is llama.cpp's copy of OpenAI's template,
    # unchanged; checked where a llama.cpp source tree is given.
    root = os.environ.get("SQUEEZE_LLAMA_CPP_DIR", "")
    if not root:
        pytest.skip("SQUEEZE_LLAMA_CPP_DIR (a llama.cpp source tree or llama-cpp-python sdist) is not set")
    for sub in ("", os.path.join("vendor", "llama.cpp")):
        path = os.path.join(root, sub, "models", "templates", "openai-gpt-oss-120b.jinja")
        if os.path.isfile(path):
            published = open(path, encoding="utf-8").read()
            assert open(os.path.join(FIXTURES, "gpt-oss.jinja"), encoding="utf-8").read() == published
            return
    pytest.skip(f"no models/templates/openai-gpt-oss-120b.jinja under {root}")


def _official_muse_glimmer():
    # The released template, from a llama.cpp source tree given at run time; never committed.
    root = os.environ.get("SQUEEZE_LLAMA_CPP_DIR", "")
    if not root:
        return None, "SQUEEZE_LLAMA_CPP_DIR (a llama.cpp source tree or llama-cpp-python sdist) is not set"
    for sub in ("", os.path.join("vendor", "llama.cpp")):
        path = os.path.join(root, sub, "models", "templates", "muse-glimmer.jinja")
        if os.path.isfile(path):
            return path, ""
    return None, f"no models/templates/muse-glimmer.jinja under {root}"


@pytest.mark.parametrize("add_generation_prompt", [False, True])
@pytest.mark.parametrize("conv_name", sorted(CONVERSATIONS))
def test_official_muse_glimmer_template(conv_name, add_generation_prompt, tmp_path):
    path, why = _official_muse_glimmer()
    if path is None:
        pytest.skip(why)
    official = open(path, encoding="utf-8").read()
    conv = CONVERSATIONS[conv_name]
    context = context_for(conv, add_generation_prompt)
    ok, expected = reference(official, context)
    # squeeze renders the released template as jinja2 does ...
    r = run_squeeze(["--template-file", path, "--bos", BOS, "--eos", EOS], tmp_path, conv, add_generation_prompt)
    check_same(ok, expected, r)
    # ... and the template written here renders what the released one renders.
    ours_ok, ours = reference(open(os.path.join(FIXTURES, "muse-glimmer.jinja"), encoding="utf-8").read(), context)
    assert ours_ok == ok, (ours, expected)
    if ok:
        assert ours == expected


def test_raise_exception_message_and_position(tmp_path):
    gemma = os.path.join(FIXTURES, "gemma-3-it.jinja")
    r = run_squeeze(["--template-file", gemma], tmp_path, CONVERSATIONS["bad_alternation"], False)
    assert r.returncode != 0
    err = r.stderr.decode().strip()
    assert len(err.splitlines()) == 1
    assert "gemma-3-it.jinja:19:" in err and "Conversation roles must alternate user/assistant" in err


@pytest.mark.parametrize("source, needle", [
    ("{% if x %}never closed", ":1:1: block opened here is never closed"),
    ("{{ 1 + }}", ":1:8: expected an expression"),
    ("a\n{% for %}", ":2:8: expected a name"),
    ("{{ 'unterminated }}", "unterminated string"),
    ("{% frobnicate %}", "unsupported tag 'frobnicate'"),
    ("{{ messages | nosuch }}", "no filter named 'nosuch'"),
    ("{{ x.y }}", "'x' is undefined"),
    ("{{ [1].append(2) }}", "unsafe"),
    ("{% for i in range(1000000) %}{% endfor %}", "Range too big"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "too deep"),
    ("{{ 'x' * 100000000000 }}", "too large"),
    ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nested too deeply"),
])
def test_bad_templates_fail_on_one_line(source, needle, tmp_path):
    t = tmp_path / "t.jinja"
    t.write_text(source)
    r = subprocess.run([SQ, "template", "--template-file", str(t)], capture_output=True, timeout=60)
    assert r.returncode != 0, r.stdout
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert needle in lines[0]


def test_jinja2_default_whitespace_options(tmp_path):
    source = "<ul>\n  {% for m in messages %}\n  <li>{{ m.content }}</li>\n  {% endfor %}\n</ul>\n"
    conv = CONVERSATIONS["multi_turn_system"]
    plain = jinja2.Environment().from_string(source).render(**context_for(conv, False))
    r = run_squeeze(["--template-file", str(_write(tmp_path, source)), "--no-trim-blocks", "--no-lstrip-blocks"],
                    tmp_path, conv, False)
    check_same(True, plain, r)
    ok, chat = reference(source, context_for(conv, False))
    assert ok and chat != plain
    r = run_squeeze(["--template-file", str(_write(tmp_path, source))], tmp_path, conv, False)
    check_same(True, chat, r)


def _write(tmp_path, source):
    p = tmp_path / "w.jinja"
    p.write_text(source)
    return p


def _models():
    roots = [os.environ.get("SQUEEZE_MODELS", ""), os.path.join(ROOT, "build", "models")]
    seen = {}
    for root in roots:
        for p in sorted(glob.glob(os.path.join(root, "*.gguf"))) if root else []:
            seen.setdefault(os.path.basename(p), p)
    return sorted(seen.values())


@pytest.mark.parametrize("model", _models() or [None], ids=lambda p: os.path.basename(p) if p else "none")
def test_gguf_embedded_template(model, tmp_path):
    if model is None:
        pytest.skip("no GGUF models under build/models")
    gguf = pytest.importorskip("gguf")
    reader = gguf.GGUFReader(model)
    field = reader.fields.get("tokenizer.chat_template")
    if field is None:
        pytest.skip("no tokenizer.chat_template")
    source = bytes(field.parts[field.data[0]]).decode("utf-8")
    tokens = reader.fields["tokenizer.ggml.tokens"]

    def token(key):
        f = reader.fields.get(key)
        if f is None:
            return ""
        tid = int(f.parts[f.data[0]][0])
        return bytes(tokens.parts[tokens.data[tid]]).decode("utf-8")

    bos, eos = token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id")
    printed = subprocess.run([SQ, "template", "-m", model, "--print-template"], capture_output=True, timeout=60)
    assert printed.returncode == 0 and printed.stdout.decode("utf-8") == source
    for name in ("multi_turn_system", "multi_turn_no_system", "unicode", "content_parts", "tool_call"):
        for agp in (False, True):
            conv = CONVERSATIONS[name]
            ok, expected = reference(source, context_for(conv, agp, bos, eos))
            check_same(ok, expected, run_squeeze(["-m", model], tmp_path, conv, agp))

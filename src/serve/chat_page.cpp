// serve/chat_page.cpp — the static chat page served at `/`: one HTML file, no external
// resources, talking to /v1/chat/completions with streaming. `?q=TEXT&send=1` fills the
// box and sends it on load (links, and the headless-browser test).
#include "serve/chat_page.h"

namespace squeeze::serve {

const char* chat_page_html() {
  return R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>squeeze</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; max-width: 46rem; margin: 0 auto; padding: 1rem; color: #222; }
  h1 { font-size: 1.1rem; margin: 0 0 .6rem; }
  #log { display: flex; flex-direction: column; gap: .6rem; margin-bottom: 1rem; }
  .msg { white-space: pre-wrap; padding: .5rem .7rem; border-radius: .4rem; }
  .user { background: #e8f0fe; align-self: flex-end; }
  .assistant { background: #f3f3f3; }
  .reasoning { color: #666; font-style: italic; border-left: 3px solid #ccc; padding-left: .5rem; margin-bottom: .3rem; }
  .reasoning:empty { display: none; }
  .stats { color: #888; font-size: .8rem; margin-top: .3rem; }
  form { display: flex; gap: .5rem; }
  textarea { flex: 1; font: inherit; padding: .4rem; min-height: 2.6rem; }
  select, button { font: inherit; }
  .error { color: #b00020; }
</style>
</head>
<body>
<h1>squeeze · <span id="model">…</span></h1>
<div id="log"></div>
<form id="form">
  <textarea id="input" placeholder="Message (Enter sends, Shift+Enter: new line)"></textarea>
  <select id="effort" title="reasoning effort">
    <option>low</option><option>medium</option><option selected>high</option><option>xhigh</option>
  </select>
  <input id="max" type="number" min="1" placeholder="max tokens" title="max tokens (empty: until the context is full)" style="width: 6rem">
  <button id="send" type="submit">Send</button>
</form>
<script>
"use strict";
const log = document.getElementById("log"), input = document.getElementById("input");
const messages = [];
let modelId = null;

// With `--api-key` the page asks for the key once and keeps it in this browser.
function headers() {
  const h = {"Content-Type": "application/json"}, k = localStorage.getItem("squeeze-key");
  if (k) h["Authorization"] = "Bearer " + k;
  return h;
}
async function call(url, init) {
  let r = await fetch(url, {...init, headers: headers()});
  if (r.status === 401) {
    const k = prompt("API key");
    if (k) { localStorage.setItem("squeeze-key", k); r = await fetch(url, {...init, headers: headers()}); }
  }
  return r;
}

call("/v1/models").then(r => r.json()).then(j => {
  modelId = j.data[0].id;
  document.getElementById("model").textContent = modelId;
});

function bubble(cls) {
  const d = document.createElement("div");
  d.className = "msg " + cls;
  log.appendChild(d);
  return d;
}

async function send(text) {
  messages.push({role: "user", content: text});
  bubble("user").textContent = text;
  const box = bubble("assistant");
  const reasoning = document.createElement("div"); reasoning.className = "reasoning";
  const content = document.createElement("div"); content.className = "content";
  const stats = document.createElement("div"); stats.className = "stats";
  box.append(reasoning, content, stats);
  const t0 = performance.now();
  let first = null, usage = null, finish = null;
  try {
    const r = await call("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({messages, stream: true, stream_options: {include_usage: true},
                            max_tokens: Number(document.getElementById("max").value) || undefined,
                            reasoning_effort: document.getElementById("effort").value})});
    if (!r.ok) throw new Error((await r.json()).error.message);
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const ev = buf.slice(0, i); buf = buf.slice(i + 2);
        if (!ev.startsWith("data: ")) continue;
        const data = ev.slice(6);
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        if (j.usage) usage = j.usage;
        if (!j.choices || !j.choices.length) continue;
        const c = j.choices[0], d = c.delta || {};
        if (d.reasoning_content) reasoning.textContent += d.reasoning_content;
        if (d.content) content.textContent += d.content;
        if (d.tool_calls) for (const t of d.tool_calls) content.textContent += "\n[tool call] " + t.function.name + " " + t.function.arguments;
        if ((d.content || d.reasoning_content) && first === null) first = performance.now();
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    const secs = (performance.now() - (first ?? t0)) / 1000;
    const n = usage ? usage.completion_tokens : 0;
    stats.textContent = `${n} tokens · ${(n > 1 && secs > 0 ? (n - 1) / secs : 0).toFixed(1)} tokens/s · first token ${(((first ?? performance.now()) - t0) / 1000).toFixed(2)} s · ${finish}`;
    messages.push({role: "assistant", content: content.textContent, reasoning_content: reasoning.textContent || undefined});
    box.dataset.done = "1";
  } catch (e) {
    stats.className = "stats error";
    stats.textContent = "error: " + e.message;
    box.dataset.done = "error";
  }
}

document.getElementById("form").addEventListener("submit", ev => {
  ev.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  send(text);
});
input.addEventListener("keydown", ev => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); document.getElementById("send").click(); }
});
const params = new URLSearchParams(location.search);
if (params.get("q")) {
  input.value = params.get("q");
  if (params.get("send") === "1") document.getElementById("send").click();
}
</script>
</body>
</html>
)HTML";
}

}  // namespace squeeze::serve

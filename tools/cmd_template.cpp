// tools/cmd_template.cpp — `squeeze template`: render a chat template (from a .jinja
// file or a GGUF file's tokenizer.chat_template) over a conversation, as transformers'
// apply_chat_template(..., tokenize=False) would. The rendering is written to stdout
// byte for byte, with no newline added.
#include <cstdio>
#include <string>

#include "args.h"
#include "chat/template.h"
#include "command.h"
#include "core/bounded_json.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/reader.h"

namespace {

using squeeze::fail;
using squeeze::chat::Json;

Json read_json(const std::string& path) {
  return squeeze::parse_json_or_throw<Json>(squeeze::read_whole_file(path), path);
}

// The text of token `key` (an id) in the GGUF vocabulary, or "" when absent.
std::string special_token(const squeeze::gguf::File& f, const char* key) {
  const auto* id_value = f.metadata().find(key);
  if (!id_value) return "";
  const auto id = id_value->as_i64();
  const auto tokens = f.metadata().get_string_array_opt("tokenizer.ggml.tokens");
  if (!id || !tokens || *id < 0 || static_cast<size_t>(*id) >= tokens->size())
    fail(f.path(), ": ", key, " is not a token id of tokenizer.ggml.tokens");
  return (*tokens)[static_cast<size_t>(*id)];
}

int run_template(int argc, char** argv) {
  squeeze::cli::Args args(
      "template", "template (--template-file T.jinja | -m M.gguf) [--messages M.json] [options]",
      "Render a chat template over messages, as Hugging Face transformers does (jinja2 with\n"
      "trim_blocks and lstrip_blocks, tojson as json.dumps(ensure_ascii=False), raise_exception,\n"
      "strftime_now). Variables: messages, tools (None unless given), documents (None),\n"
      "add_generation_prompt, bos_token, eos_token, then everything in --context.");
  args.option({"--template-file"}, "FILE", "the template source")
      .option({"-m", "--model"}, "FILE", "a GGUF file: its tokenizer.chat_template, BOS and EOS texts")
      .option({"--messages"}, "FILE", "JSON: a list of messages, or an object with \"messages\" (and \"tools\")")
      .option({"--tools"}, "FILE", "JSON list of tool definitions")
      .option({"--context"}, "FILE", "JSON object of more variables (override the ones above)")
      .flag({"--add-generation-prompt"}, "end with the assistant turn's opening")
      .option({"--bos"}, "TEXT", "bos_token (default: the GGUF's BOS text, or empty)")
      .option({"--eos"}, "TEXT", "eos_token (default: the GGUF's EOS text, or empty)")
      .int_option({"--now"}, "SECONDS", "fix strftime_now's clock: Unix time, formatted in UTC",
                  {0, int64_t{1} << 40})
      .flag({"--no-trim-blocks"}, "keep the newline after block tags (jinja2's default)")
      .flag({"--no-lstrip-blocks"}, "keep indentation before block tags (jinja2's default)")
      .flag({"--print-template"}, "print the template source instead of rendering it");
  if (!args.parse(argc, argv)) return 0;
  if (args.has("--template-file") == args.has("-m")) fail("template: give exactly one of --template-file or -m");

  std::string source, bos, eos, name;
  if (args.has("-m")) {
    const squeeze::gguf::File f(args.get("-m"));
    const auto* t = f.metadata().find("tokenizer.chat_template");
    if (!t || !t->string_if()) fail(f.path(), ": no tokenizer.chat_template string in the metadata");
    source = *t->string_if();
    bos = special_token(f, "tokenizer.ggml.bos_token_id");
    eos = special_token(f, "tokenizer.ggml.eos_token_id");
    name = f.path() + ": tokenizer.chat_template";
  } else {
    source = squeeze::read_whole_file(args.get("--template-file"));
    name = args.get("--template-file");
  }
  if (args.has("--print-template")) {
    std::fwrite(source.data(), 1, source.size(), stdout);
    return 0;
  }
  if (args.has("--bos")) bos = args.get("--bos");
  if (args.has("--eos")) eos = args.get("--eos");

  Json messages = Json::array(), tools = nullptr, extra = Json::object();
  if (args.has("--messages")) {
    const Json m = read_json(args.get("--messages"));
    if (m.is_array()) {
      messages = m;
    } else if (m.is_object() && m.contains("messages") && m["messages"].is_array()) {
      messages = m["messages"];
      if (m.contains("tools")) tools = m["tools"];
    } else {
      fail(args.get("--messages"), ": expected a list of messages or an object with \"messages\"");
    }
  }
  if (args.has("--tools")) tools = read_json(args.get("--tools"));
  if (args.has("--context")) {
    extra = read_json(args.get("--context"));
    if (!extra.is_object()) fail(args.get("--context"), ": expected a JSON object");
  }

  squeeze::chat::TemplateOptions options;
  options.name = name;
  options.trim_blocks = !args.has("--no-trim-blocks");
  options.lstrip_blocks = !args.has("--no-lstrip-blocks");
  if (args.has("--now")) options.now = args.get_int("--now");
  const squeeze::chat::Template t(source, options);
  const std::string out =
      squeeze::chat::render_chat(t, messages, args.has("--add-generation-prompt"), bos, eos, tools, extra);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

SQZ_COMMAND("template", "render a chat template (Jinja) over messages, as transformers does", run_template);

// tools/config_options.h — the --config NAME and shape-override options shared by the
// commands that build a ModelConfig from the command line (make-model, quantize --dry-run),
// so a dry run can describe exactly the model make-model writes.
#pragma once

#include <string>

#include "args.h"
#include "model/config.h"

namespace squeeze::cli {

// Declares --config (default `default_config`, "" for no default) and the overrides
// --arch, --layers, --embd, --heads, --kv-heads, --head-dim, --ff, --vocab, --window, --ctx.
void add_config_options(Args& args, const std::string& default_config);
// The built-in config named by --config with the overrides applied, validated.
model::ModelConfig config_from_args(const Args& args);

}  // namespace squeeze::cli

// `stamen embed`: one text (or line of token ids) per stdin line in, one JSON array of
// floats per line out. A contract used by automated checks: keep it stable.
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::apps {

// Registers the subcommand on `app`; it runs when parsed.
void AddEmbedCommand(CLI::App& app);

}  // namespace stamen::apps

// `stamen tokenize`: one text per stdin line in, one line of ids (or pieces) out.
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::apps {

// Registers the subcommand on `app`; it runs when parsed.
void AddTokenizeCommand(CLI::App& app);

}  // namespace stamen::apps

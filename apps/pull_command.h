// `stamen pull org/name`: downloads a model from the Hugging Face hub into the hub cache and
// prints its snapshot folder.
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::apps {

// Registers the subcommand on `app`; it runs when parsed.
void AddPullCommand(CLI::App& app);

}  // namespace stamen::apps

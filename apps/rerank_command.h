// `stamen rerank`: `query<TAB>document` per stdin line in, one raw score (the logit of the
// model's single label) per line out. A contract used by automated checks: keep it stable.
#pragma once

#include <CLI/CLI.hpp>

namespace stamen::apps {

// Registers the subcommand on `app`; it runs when parsed.
void AddRerankCommand(CLI::App& app);

}  // namespace stamen::apps

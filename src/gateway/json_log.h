// `--json-output`: every log line as one JSON object, as Text Embeddings Inference writes its
// logs for log collectors: {"timestamp": "2026-12-01T15:46:30.123456Z", "level": "INFO",
// "message": "…", "target": "stamen"}.
#pragma once

namespace stamen::gateway {

// Switches spdlog's default logger to JSON lines (UTC timestamps, the message escaped).
void UseJsonLogs();

}  // namespace stamen::gateway

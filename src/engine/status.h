// The engine uses stamen's shared error type (src/common/status.h).
#pragma once

#include "common/status.h"

namespace stamen::engine {
using ::stamen::Status;
using ::stamen::StatusOr;
}  // namespace stamen::engine

// A data directory opened for reading only (eval --data-dir, diagnose --data-dir): never created or
// written, retention never applied, and a note when a live agent records into it (its newest readings
// are still in that agent's memory).
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <string>

#include "cli/invocation.h"
#include "store/tsdb.h"

namespace gpuscope::cli {

// Opens `data_dir`'s store read-only. On failure prints the one-line error ("--data-dir DIR: ...") and
// returns the exit code: kExitUsage when the directory is missing or holds no store, kExitRuntime when
// the store cannot be read.
std::expected<std::unique_ptr<store::Tsdb>, int> open_read_only_store(const std::string& data_dir,
                                                                      const Invocation& inv, std::int64_t now_ms);

}  // namespace gpuscope::cli

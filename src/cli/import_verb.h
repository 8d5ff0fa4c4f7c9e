// `gpuscope import`: recorded history (Prometheus query_range JSON, nvidia-smi CSV logs) loaded into
// a data directory that eval --data-dir, serve and the rest then read, for post-mortems offline.
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "cli/invocation.h"

namespace gpuscope::cli {

struct ImportOptions {
  std::string data_dir;
  std::vector<std::string> files;
  std::string hostname;          // --hostname: the Hostname label of every imported series
  std::int64_t utc_offset_s = 0;  // --utc-offset: the zone nvidia-smi's timestamps were printed in
};

std::expected<ImportOptions, ParseExit> parse_import_args(std::span<const std::string> args);
int run_import(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli

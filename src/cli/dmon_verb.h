// `gpuscope dmon`: nvidia-smi dmon's scrolling one-row-per-GPU table (text or CSV, with -o D/T columns),
// NDJSON, or dcgmi dmon's layout for DCGM field ids (-e), every -d seconds, for -c sets or until
// SIGINT/SIGTERM, to stdout or to -f FILE.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <span>
#include <string>

#include "cli/invocation.h"
#include "export/dmon_table.h"

namespace gpuscope::cli {

struct DmonOptions {
  std::string groups = "puc";  // -s letters, validated
  std::chrono::seconds delay{1};
  std::optional<long long> count;  // -c: sets of rows, then exit
  bool json = false;
  exporter::DmonLayout layout;  // --format csv,nounit,noheader and -o D/T
  std::string ids;
  std::string file;         // -f: write here instead of stdout
  std::string dcgm_fields;  // -e: DCGM field ids, dcgmi's layout; validated
};

// Text mode prints the two header lines first and again once this many rows followed the last ones
// (between sets, never inside one), so a scrolled terminal still shows what the columns are.
inline constexpr int kDmonRowsPerHeader = 20;

std::expected<DmonOptions, ParseExit> parse_dmon_args(std::span<const std::string> args);
int run_dmon(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli

// `gpuscope pmon`: nvidia-smi pmon's scrolling per-process table: for every process on each GPU its
// SM, memory, encoder, decoder, JPEG and OFA utilization (-s u) and memory (-s m), every -d seconds.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <span>
#include <string>

#include "cli/invocation.h"
#include "export/time_columns.h"

namespace gpuscope::cli {

struct PmonOptions {
  std::string groups = "u";  // -s letters, validated
  std::chrono::seconds delay{1};
  std::optional<long long> count;  // -c: sets of rows, then exit
  exporter::TimeColumns time;      // -o D/T
  std::string ids;
  std::string file;  // -f: write here instead of stdout
};

// nvidia-smi pmon's -d range.
inline constexpr long long kPmonMaxDelaySeconds = 10;

std::expected<PmonOptions, ParseExit> parse_pmon_args(std::span<const std::string> args);
int run_pmon(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli

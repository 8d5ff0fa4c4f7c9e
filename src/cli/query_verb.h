// `gpuscope query`: nvidia-smi's --query-gpu and --query-compute-apps with the same names and CSV, plus
// numeric JSON; -l/-lms repeat the reading until SIGINT/SIGTERM.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/invocation.h"
#include "export/retired_pages_query.h"
#include "export/compute_apps_query.h"
#include "export/gpu_query.h"
#include "export/gpu_query_csv.h"
#include "export/mig_query.h"

namespace gpuscope::cli {

struct QueryOptions {
  std::vector<exporter::GpuColumn> gpu_columns;  // --query-gpu
  std::vector<exporter::AppColumn> app_columns;  // --query-compute-apps
  bool apps = false;                             // which of the two was asked for
  std::vector<const exporter::MigColumn*> mig_columns;  // --query-mig (gpuscope's own)
  bool mig = false;
  std::vector<exporter::RetiredPageColumn> retired_columns;  // --query-retired-pages
  bool retired = false;
  bool full = false;                             // -q: nvidia-smi -q's report instead of either
  bool json = false;
  exporter::CsvStyle csv;
  std::optional<std::chrono::milliseconds> loop;  // -l SECONDS or -lms MILLISECONDS
  std::string ids;                                // -i, resolved once the GPUs are known
};

std::expected<QueryOptions, ParseExit> parse_query_args(std::span<const std::string> args);
int run_query(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli

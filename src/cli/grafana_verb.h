// `gpuscope grafana-dashboard`: prints gpuscope's Grafana dashboard (JSON, ready to import or provision),
// with the data source and title the flags give. Never opens NVML.
#pragma once

#include <expected>
#include <span>
#include <string>

#include "cli/invocation.h"
#include "export/grafana_dashboard.h"

namespace gpuscope::cli {

std::expected<exporter::GrafanaDashboardOptions, ParseExit> parse_grafana_args(std::span<const std::string> args);
int run_grafana_dashboard(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli

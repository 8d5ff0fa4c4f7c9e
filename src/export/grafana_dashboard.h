// gpuscope's Grafana dashboard as Grafana's dashboard JSON model: the rows of grafana_panels.h laid out on
// Grafana's 24-column grid, the datasource/host/GPU variables, and the firing alerts as annotations. The
// labels and metric names are dcgm-exporter's, so the same dashboard serves a dcgm-exporter fleet (the
// panels of series only gpuscope exports then show "No data").
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpuscope::exporter {

struct GrafanaDashboardOptions {
  // The Prometheus data source the datasource variable selects first (a name or uid).
  std::string datasource = "Prometheus";
  std::string title = "GPUs (gpuscope)";
};

// The dashboard's stable uid: Grafana replaces a dashboard with the same uid on import or provisioning.
inline constexpr std::string_view kGrafanaDashboardUid = "gpuscope-gpus";
// The dashboard JSON schema version written (Grafana 10.4 and 11; newer Grafana migrates it on load).
inline constexpr int kGrafanaSchemaVersion = 39;

nlohmann::ordered_json grafana_dashboard(const GrafanaDashboardOptions& options);

}  // namespace gpuscope::exporter

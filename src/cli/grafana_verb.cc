#include "cli/grafana_verb.h"

#include <ostream>

namespace gpuscope::cli {

std::expected<exporter::GrafanaDashboardOptions, ParseExit> parse_grafana_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "grafana-dashboard",
      "Prints gpuscope's Grafana dashboard as JSON: rows by failure mode (health, throughput,\n"
      "bottlenecks, cost and waste, diagnosis, training), host and GPU variables, and firing alerts as\n"
      "annotations. It uses dcgm-exporter's metric and label names, so it also works on a dcgm-exporter\n"
      "fleet (the panels of gpuscope-only series then show no data). Import it in Grafana (Dashboards >\n"
      "New > Import) or provision it from a file: deploy/grafana/README.md.",
      "  gpuscope grafana-dashboard > gpuscope-dashboard.json\n"
      "  gpuscope grafana-dashboard --datasource Mimir --title 'Training cluster GPUs'");
  exporter::GrafanaDashboardOptions options;
  app->add_option("--datasource", options.datasource,
                  "the Prometheus data source (name or uid) the dashboard's datasource variable selects first "
                  "(default Prometheus)")
      ->type_name("NAME");
  app->add_option("--title", options.title, "the dashboard's title (default \"GPUs (gpuscope)\")")->type_name("TITLE");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  if (options.datasource.empty()) return std::unexpected(usage("--datasource needs a data source name"));
  if (options.title.empty()) return std::unexpected(usage("--title needs a title"));
  return options;
}

int run_grafana_dashboard(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_grafana_args(args);
  if (!options) return finish(options.error(), inv);
  inv.out << exporter::grafana_dashboard(*options).dump(2) << '\n';
  inv.out.flush();
  return inv.out ? kExitOk : kExitRuntime;
}

}  // namespace gpuscope::cli

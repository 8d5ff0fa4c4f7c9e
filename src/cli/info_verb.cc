#include "cli/info_verb.h"

#include <ostream>

#include <fmt/format.h>

#include "cli/gpu_selector.h"
#include "export/gpu_info_report.h"
#include "export/machine_value.h"

namespace gpuscope::cli {

std::expected<InfoOptions, ParseExit> parse_info_args(std::span<const std::string> args) {
  auto app = make_verb_app("info",
                           "Show what does not change while the node runs: driver, NVML and CUDA versions, the NVML "
                           "library file loaded, and each GPU's identity, memory, clocks, power limits and PCIe link.",
                           "  gpuscope info\n  gpuscope info -i 0 --format json\n"
                           "  gpuscope --simulate info -i 0     # anywhere: gpuscope's simulated 8x H100 node");
  InfoOptions options;
  std::string format = "text";
  app->add_option("--format", format, "text (default) or json (numbers, units in key names)")->type_name("FORMAT");
  app->add_option("-i,--id", options.ids, "only these GPUs: indices, UUIDs or PCI bus ids, comma-separated")
      ->type_name("IDS");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  auto json = json_format(format);
  if (!json) return std::unexpected(json.error());
  options.json = *json;
  if (app->count("-i") > 0) {
    if (auto ids = split_gpu_ids(options.ids); !ids) return std::unexpected(usage(ids.error()));
  }
  return options;
}

int run_info(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_info_args(args);
  if (!options) return finish(options.error(), inv);
  auto backend = open_backend(inv);
  if (!backend) return backend.error();
  const auto& all = (*backend)->gpus();
  auto selected = select_gpus(options->ids, all);
  if (!selected) return usage_error(inv.err, fmt::format("unknown GPU '{}' in -i", selected.error()));
  std::vector<model::GpuInfo> gpus;
  for (auto pos : *selected) gpus.push_back(all[pos]);

  if (options->json) {
    inv.out << exporter::json_line(exporter::gpu_info_json((*backend)->system(), (*backend)->gpus().size(), gpus)) << '\n';
  } else {
    inv.out << exporter::gpu_info_text((*backend)->system(), (*backend)->gpus().size(), gpus);
  }
  inv.out.flush();
  return inv.out ? kExitOk : kExitRuntime;
}

}  // namespace gpuscope::cli

#include "cli/list_verb.h"

#include <algorithm>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "cli/gpu_selector.h"
#include "export/gpu_list.h"
#include "export/machine_value.h"

namespace gpuscope::cli {

std::expected<ListOptions, ParseExit> parse_list_args(std::span<const std::string> args) {
  auto app = make_verb_app("list",
                           "List the GPUs, one line each, like nvidia-smi -L; under a GPU in MIG mode, one line\n"
                           "per MIG device (profile, index, MIG-UUID), as nvidia-smi -L prints them.",
                           "  gpuscope list --format json\n"
                           "  gpuscope list --count             # the number of GPUs, for launch scripts\n"
                           "  gpuscope --simulate list          # anywhere: gpuscope's simulated 8x H100 node");
  ListOptions options;
  std::string format = "text";
  app->add_option("--format", format, "text (default) or json")->type_name("FORMAT");
  app->add_flag("--count", options.count_only,
                "print only the number of GPUs (with -i: of those named); JSON: {\"gpu_count\":N}");
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

int run_list(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_list_args(args);
  if (!options) return finish(options.error(), inv);
  auto backend = open_backend(inv);
  if (!backend) return backend.error();
  const auto& all = (*backend)->gpus();
  auto selected = select_gpus(options->ids, all);
  if (!selected) return usage_error(inv.err, fmt::format("unknown GPU '{}' in -i", selected.error()));
  std::vector<model::GpuInfo> gpus;
  for (auto pos : *selected) gpus.push_back(all[pos]);
  // MIG devices come and go while the GPU stays (nvidia-smi mig -cgi/-dgi): they are read now, from a
  // reading, and only where discovery saw MIG mode on, so a host without MIG pays no reading.
  std::vector<std::vector<model::MigInstanceSample>> mig_devices;
  if (!options->count_only &&
      std::any_of(gpus.begin(), gpus.end(), [](const model::GpuInfo& g) { return g.mig_enabled == true; })) {
    const model::Snapshot snapshot = (*backend)->sample();
    for (const auto& info : gpus) {
      auto it = std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(),
                             [&](const model::GpuSample& s) { return s.index == info.index; });
      mig_devices.push_back(it != snapshot.gpus.end() ? it->mig_instances : std::vector<model::MigInstanceSample>{});
    }
  }
  if (options->count_only) {
    if (options->json) {
      inv.out << exporter::json_line(nlohmann::ordered_json{{"gpu_count", gpus.size()}}) << '\n';
    } else {
      inv.out << gpus.size() << '\n';
    }
  } else if (options->json) {
    inv.out << exporter::json_line(exporter::gpu_list_json(gpus, mig_devices)) << '\n';
  } else {
    inv.out << exporter::gpu_list_text(gpus, mig_devices);
  }
  inv.out.flush();
  return inv.out ? kExitOk : kExitRuntime;
}

}  // namespace gpuscope::cli

#include "cli/list_verb.h"

#include <ostream>

#include <fmt/format.h>

#include "export/gpu_list.h"
#include "export/machine_value.h"

namespace gpuscope::cli {

std::expected<ListOptions, ParseExit> parse_list_args(std::span<const std::string> args) {
  auto app = make_verb_app("list", "List the GPUs, one line each, like nvidia-smi -L.", "  gpuscope list --format json\n  gpuscope --simulate list          # anywhere: gpuscope's simulated 8x H100 node");
  std::string format = "text";
  app->add_option("--format", format, "text (default) or json")->type_name("FORMAT");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  auto json = json_format(format);
  if (!json) return std::unexpected(json.error());
  return ListOptions{.json = *json};
}

int run_list(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_list_args(args);
  if (!options) return finish(options.error(), inv);
  auto backend = open_backend(inv);
  if (!backend) return backend.error();
  const auto& gpus = (*backend)->gpus();
  if (options->json) {
    inv.out << exporter::json_line(exporter::gpu_list_json(gpus)) << '\n';
  } else {
    inv.out << exporter::gpu_list_text(gpus);
  }
  inv.out.flush();
  return inv.out ? kExitOk : kExitRuntime;
}

}  // namespace gpuscope::cli

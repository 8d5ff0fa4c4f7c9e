#include "cli/top_verb.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli/gpu_selector.h"
#include "cli/http_get.h"
#include "cli/stop_signal.h"
#include "top/local_reader.h"
#include "top/reading_feed.h"
#include "top/remote_reader.h"
#include "top/terminal.h"
#include "top/top_screen.h"
#include "top/top_ui.h"

namespace gpuscope::cli {
namespace {

// After 'q', how long the reader thread is given to finish the reading in progress before top exits
// without it: quitting stays instant while a driver call hangs.
constexpr auto kStopGrace = std::chrono::milliseconds(1000);
// An agent that has not answered within this long (or two intervals) is reported as failing.
constexpr auto kHttpTimeoutAtLeast = std::chrono::milliseconds(2000);

struct TerminalSize {
  int width = 0;
  int height = 0;
};

std::optional<TerminalSize> terminal_size() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0) return std::nullopt;
  return TerminalSize{ws.ws_col, ws.ws_row};
}

std::string trim_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

std::expected<TopOptions, ParseExit> parse_top_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "top",
      "A live full-screen view of the GPUs, like nvtop/nvitop. Per GPU: utilization.gpu (nvidia-smi's 'GPU util':\n"
      "a kernel ran, however small) beside SM active (how much of the GPU was busy), tensor and DRAM activity,\n"
      "memory, power, temperature, clocks, throttle reasons and the diagnosis' verdict; below, the processes.\n"
      "A GPU in MIG mode gets a row per GPU instance (0/1 = GPU 0, GPU instance 1): profile, SM and tensor\n"
      "activity, memory, processes, its own verdict and pod; its processes show 0/1 in the GPU column.\n"
      "Keys: h help, q quit, Up/Down or 0-9 select a GPU, Tab focus it, s sort, u filter by user, p pause.",
      "  gpuscope top\n  gpuscope top -i 0,1 --interval 500ms\n  gpuscope top --url http://gpu-node-7:9400   # a running agent\n"
      "  gpuscope --simulate top                      # anywhere: gpuscope's simulated 8x H100 node");
  TopOptions options;
  std::string interval, sort = "memory";
  app->add_option("--url", options.url, "read a running agent (gpuscope serve) instead of NVML")->type_name("URL");
  app->add_option("--interval,-d", interval, "time between readings (default 1s; at least 100ms)")->type_name("DURATION");
  app->add_option("-i,--id", options.ids, "only these GPUs: indices, UUIDs or PCI bus ids, comma-separated")
      ->type_name("IDS");
  app->add_option("--user", options.user, "show only this user's processes at start (key u changes it)")->type_name("NAME");
  app->add_option("--sort", sort, "process order at start: memory (default), sm or pid")->type_name("KEY");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  if (app->count("--interval") > 0) {
    auto d = parse_duration(interval);
    if (!d || *d < kTopMinInterval || *d > std::chrono::hours(1)) {
      return std::unexpected(usage(fmt::format("invalid value '{}' for --interval (a duration from 100ms to 1h: 500ms, 2s)", interval)));
    }
    options.interval = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  }
  if (sort == "memory" || sort == "mem") {
    options.sort = top::SortKey::kMemory;
  } else if (sort == "sm" || sort == "SM%") {
    options.sort = top::SortKey::kSmPercent;
  } else if (sort == "pid") {
    options.sort = top::SortKey::kPid;
  } else {
    return std::unexpected(usage(fmt::format("unknown sort '{}' in --sort (memory, sm or pid)", sort)));
  }
  if (app->count("--url") > 0 && !options.url.starts_with("http://") && !options.url.starts_with("https://")) {
    return std::unexpected(usage(fmt::format("invalid URL '{}' in --url (http://HOST:PORT)", options.url)));
  }
  if (app->count("-i") > 0) {
    if (auto split = split_gpu_ids(options.ids); !split) return std::unexpected(usage(split.error()));
  }
  return options;
}

int run_top(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_top_args(args);
  if (!options) return finish(options.error(), inv);
  // A full-screen view needs a terminal on both ends; in a pipe or a log it would only write escapes.
  if (&inv.out != &std::cout || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
    const char* which = &inv.out != &std::cout || !isatty(STDOUT_FILENO) ? "stdout" : "stdin";
    return usage_error(inv.err, fmt::format("top needs a terminal, and {} is not one (for a log: gpuscope dmon, or "
                                            "gpuscope query -l 1)", which));
  }
  if (const auto size = terminal_size(); !size || size->width < top::kMinWidth || size->height < top::kMinHeight) {
    inv.err << fmt::format("gpuscope: terminal too small for top: {}x{} (it needs at least {}x{})\n",
                           size ? size->width : 0, size ? size->height : 0, top::kMinWidth, top::kMinHeight);
    return kExitRuntime;
  }

  std::unique_ptr<nvml::NvmlBackend> backend;
  std::unique_ptr<top::LocalReader> local;
  std::unique_ptr<top::RemoteReader> remote;
  std::string source;
  if (!options->url.empty()) {
    const std::string base = trim_slash(options->url);
    const auto timeout = std::max(kHttpTimeoutAtLeast, 2 * options->interval);
    std::set<std::string> ids;
    if (!options->ids.empty()) {
      const auto split = split_gpu_ids(options->ids);  // checked by parse_top_args
      if (split) ids.insert(split->begin(), split->end());
    }
    remote = std::make_unique<top::RemoteReader>(
        [base, timeout](const std::string& path) -> std::expected<std::string, std::string> {
          auto answer = http_get(base + path, timeout);
          if (!answer) return std::unexpected(answer.error());
          if (answer->status != 200) {
            return std::unexpected(fmt::format("HTTP {} from {}{}: {}", answer->status, base, path, body_excerpt(answer->body)));
          }
          return std::move(answer->body);
        },
        std::move(ids));
    source = base;
  } else {
    nvml::BackendOptions reading;
    reading.read_pcie_throughput = false;  // ~20 ms a GPU on a real driver; top shows GPM's activity instead
    auto opened = open_backend(inv, reading);
    if (!opened) return opened.error();
    backend = std::move(*opened);
    auto selected = select_gpus(options->ids, backend->gpus());
    if (!selected) return usage_error(inv.err, fmt::format("unknown GPU '{}' in -i", selected.error()));
    top::LocalReaderOptions lo;
    if (!options->ids.empty()) {
      for (std::size_t i : *selected) lo.gpus.insert(backend->gpus()[i].index);
    }
    local = std::make_unique<top::LocalReader>(*backend, std::move(lo));
    source = backend->system().simulated ? "NVML (simulated)" : "NVML " + backend->system().driver_version;
  }

  top::ReadingFeed feed(
      [&]() -> std::expected<top::Frame, std::string> { return local ? local->read() : remote->read(); },
      options->interval);
  if (inv.handle_signals) install_stop_handlers();
  auto terminal = top::Terminal::open();
  if (!terminal) {
    inv.err << "gpuscope: " << terminal.error() << '\n';
    return kExitRuntime;
  }
  feed.start();
  top::TopModel model;
  model.set_sort(options->sort);
  model.set_user_filter(options->user);
  top::run_top_ui(**terminal, feed, model, inv.stop, {source, options->interval});
  (*terminal)->close();
  if (!feed.stop(kStopGrace)) {
    // The reader is inside a driver call that does not return: the terminal is restored, so leave
    // without waiting for it (the backend it reads must not be destroyed under it).
    inv.out.flush();
    std::_Exit(kExitOk);
  }
  return kExitOk;
}

}  // namespace gpuscope::cli

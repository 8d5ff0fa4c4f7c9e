#include "cli/invocation.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "http/query_api.h"
#include "model/printable_text.h"

namespace gpuscope::cli {
namespace {

// Verbs that open NVML take the global options that choose the library and can fail to find one.
constexpr std::string_view kNvmlFooter =
    "Global options (before or after the command):\n"
    "  --simulate[=SCENARIO]  use gpuscope's simulated NVML (optionally with a scenario file)\n"
    "  --nvml-lib PATH        load this NVML library instead of the driver's libnvidia-ml.so.1\n"
    "\n"
    "Exit codes: 0 ok, 1 runtime failure (NVML init failed), 2 usage error, 3 no NVML library found.";
// eval, trace and rules read files or an agent's API; backtest always runs the simulator itself.
constexpr std::string_view kFilesFooter =
    "Exit codes: 0 ok, 1 failure (what failed is printed), 2 usage error (bad flag, value or input).";

bool opens_nvml(std::string_view verb) {
  return verb == "list" || verb == "info" || verb == "query" || verb == "dmon" || verb == "pmon" ||
         verb == "serve";
}

// Help text is read in a terminal: no line of it runs past this many columns.
constexpr std::size_t kHelpColumns = 100;

// Breaks each line of `text` at spaces so that no line is longer than `width` (a single longer word
// stays whole).
std::string wrap_text(std::string_view text, std::size_t width) {
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    while (line.size() > width) {
      std::size_t cut = line.rfind(' ', width);
      if (cut == std::string_view::npos || cut == 0) cut = line.find(' ', width);
      if (cut == std::string_view::npos) break;
      out.append(line.substr(0, cut));
      out.push_back('\n');
      line.remove_prefix(cut + 1);
    }
    out.append(line);
    if (end == text.size()) break;
    out.push_back('\n');
    start = end + 1;
  }
  return out;
}

// CLI11's layout, with option descriptions and the verb's description wrapped to kHelpColumns.
class WrappingFormatter : public CLI::Formatter {
 public:
  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap_text(CLI::Formatter::make_option_desc(opt), kHelpColumns - column_width_);
  }
  std::string make_description(const CLI::App* app) const override {
    return wrap_text(CLI::Formatter::make_description(app), kHelpColumns);
  }
};

// CLI11's messages can span lines; usage errors are one line so scripts can grep them.
// Control bytes from outside (a flag's value, a library's message) are escaped, not sent to the terminal.
std::string one_line(std::string_view text) {
  std::string s(text);
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return model::printable_text(s);
}

}  // namespace

int finish(const ParseExit& exit, const Invocation& inv) {
  if (exit.code == kExitOk) {
    inv.out << exit.text;
    inv.out.flush();
  } else {
    usage_error(inv.err, exit.text);
  }
  return exit.code;
}

int usage_error(std::ostream& err, std::string_view message) {
  err << "gpuscope: " << one_line(message) << '\n';
  err.flush();
  return kExitUsage;
}

std::expected<void, ParseExit> parse_arguments(CLI::App& app, std::span<const std::string> args) {
  // CLI11 consumes its argument vector from the back.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return std::unexpected(ParseExit{kExitOk, app.help()});
    return std::unexpected(usage(fmt::format("{} (see '{} --help')", one_line(e.what()), app.get_name())));
  }
  return {};
}

std::unique_ptr<CLI::App> make_verb_app(std::string_view verb, std::string_view description, std::string_view example) {
  auto app = std::make_unique<CLI::App>(fmt::format("{}\n", description), fmt::format("gpuscope {}", verb));
  app->formatter(std::make_shared<WrappingFormatter>());
  app->footer(fmt::format("Example:\n{}\n\n{}\n", example, opens_nvml(verb) ? kNvmlFooter : kFilesFooter));
  return app;
}

std::expected<std::unique_ptr<nvml::NvmlBackend>, int> open_backend(const Invocation& inv,
                                                                   nvml::BackendOptions options) {
  options.simulate = inv.global.simulate;
  options.scenario = inv.global.scenario;
  options.library_path = inv.global.nvml_lib;
  auto backend = nvml::NvmlBackend::open(options);
  if (backend) return std::move(*backend);
  inv.err << "gpuscope: " << one_line(backend.error().message) << '\n';
  inv.err.flush();
  switch (backend.error().kind) {
    case nvml::BackendErrorKind::kLibraryNotFound:
      return std::unexpected(kExitNoLibrary);
    case nvml::BackendErrorKind::kSimulatorInput:
      return std::unexpected(kExitUsage);  // a bad scenario or GPUSCOPE_SIM_* value, as a missing --scenario is
    default:
      return std::unexpected(kExitRuntime);
  }
}

std::ostream* open_output_file(const std::string& path, std::ofstream& file, const Invocation& inv) {
  if (path.empty()) return &inv.out;
  file.open(path, std::ios::out | std::ios::trunc);
  if (!file) {
    inv.err << fmt::format("gpuscope: cannot open '{}' for -f: {}\n", path, std::strerror(errno));
    return nullptr;
  }
  return &file;
}

std::expected<bool, ParseExit> json_format(std::string_view value) {
  if (value == "json") return true;
  if (value == "text" || value == "table") return false;
  return std::unexpected(usage(fmt::format("unknown format '{}' in --format (text or json)", value)));
}

bool is_one_of(std::string_view value, std::initializer_list<std::string_view> allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  double v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || !(v >= 0)) return std::nullopt;
  const std::string_view unit(ptr, static_cast<std::size_t>(end - ptr));
  double scale = 0;
  if (unit == "ms") {
    scale = 1e6;
  } else if (unit == "s") {
    scale = 1e9;
  } else if (unit == "m") {
    scale = 60e9;
  } else if (unit == "h") {
    scale = 3600e9;
  } else {
    return std::nullopt;
  }
  const double ns = v * scale;
  if (ns > 1e18) return std::nullopt;
  return std::chrono::nanoseconds(static_cast<long long>(ns));
}

std::optional<long long> positive_integer(std::string_view text) {
  long long v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || ptr != end || v <= 0) return std::nullopt;
  return v;
}

std::expected<std::int64_t, std::string> parse_time(std::string_view text, std::int64_t now_ms) {
  if (text == "now") return now_ms;
  if (text.starts_with("now-")) {
    auto d = http::parse_api_duration(text.substr(4));
    if (!d) return std::unexpected(d.error());
    return now_ms - *d;
  }
  return http::parse_api_time(text);
}

}  // namespace gpuscope::cli

// What every verb is given and shares: the global options, the output streams and stop flag, how the
// NVML backend is opened, how arguments are parsed into one-line usage errors, and the exit codes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "nvml/nvml_backend.h"

namespace gpuscope::cli {

// Documented in `gpuscope --help`; scripts depend on them, so they never change meaning.
enum ExitCode : int {
  kExitOk = 0,
  kExitRuntime = 1,    // NVML initialization or discovery failed, output could not be written
  kExitUsage = 2,      // bad flag or value, unknown field name, unknown GPU id
  kExitNoLibrary = 3,  // no NVML library could be loaded
};

// Flags accepted before or after the verb.
struct GlobalOptions {
  bool simulate = false;
  std::string scenario;  // --simulate=SCENARIO
  std::string nvml_lib;  // --nvml-lib PATH
};

struct Invocation {
  GlobalOptions global;
  std::ostream& out;
  std::ostream& err;
  // Set by SIGINT/SIGTERM (or by a test); loops end at the next check and exit 0.
  const std::atomic<bool>& stop;
  // True for the real process: loops install the SIGINT/SIGTERM handlers that set `stop`. Tests that pass
  // their own flag leave the process's signal dispositions alone.
  bool handle_signals = false;
};

// How parsing ended without options to run: --help (code 0, `text` is the help for stdout) or a usage
// error (code 2, `text` is one line for stderr, without the "gpuscope: " prefix).
struct ParseExit {
  int code = kExitUsage;
  std::string text;
};

inline ParseExit usage(std::string text) { return {kExitUsage, std::move(text)}; }

// Prints a ParseExit where it belongs and returns its exit code.
int finish(const ParseExit& exit, const Invocation& inv);

// Prints "gpuscope: <message>" on stderr and returns kExitUsage.
int usage_error(std::ostream& err, std::string_view message);

// Runs CLI11 over a verb's arguments (in order, without the verb). CLI11's errors become one-line usage
// errors that point at the verb's --help.
std::expected<void, ParseExit> parse_arguments(CLI::App& app, std::span<const std::string> args);

// A CLI11 app for `verb` with gpuscope's help layout: description, options, then the example, the global
// options and the exit codes.
std::unique_ptr<CLI::App> make_verb_app(std::string_view verb, std::string_view description, std::string_view example);

// Opens NVML as the global options say. On failure prints NVML's message and returns the exit code
// (kExitNoLibrary when no library was found, kExitRuntime otherwise).
// `options` says what to read (the agent watches events and skips the slow PCIe throughput call);
// where and which library come from the global options.
std::expected<std::unique_ptr<nvml::NvmlBackend>, int> open_backend(const Invocation& inv,
                                                                   nvml::BackendOptions options = {});

// Where a verb with nvidia-smi's `-f FILE` writes: `file` opened (created, or emptied) when `path` is
// set, else inv.out. Nullptr after a one-line error naming the file; the caller exits kExitRuntime.
std::ostream* open_output_file(const std::string& path, std::ofstream& file, const Invocation& inv);

// The --format of the verbs that print for people or for scripts: "text" (also "table", the word eval
// and backtest used first) or "json". True for json; a usage error naming the value for anything else.
std::expected<bool, ParseExit> json_format(std::string_view value);

// "json" or "text"/"csv" style format values, validated per verb; returns false for anything else.
bool is_one_of(std::string_view value, std::initializer_list<std::string_view> allowed);

// "100ms", "1s", "1.5s", "2m", "1h" (a number and a unit); nullopt for anything else.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);

// A time flag's value: "now", "now-DURATION" (now-1h), Unix seconds or RFC 3339; the reason otherwise.
std::expected<std::int64_t, std::string> parse_time(std::string_view text, std::int64_t now_ms);

// A whole number > 0 (for -l, -d, -c, -lms); nullopt for anything else, including "1.5" and "0".
std::optional<long long> positive_integer(std::string_view text);

}  // namespace gpuscope::cli

// Logger: the agent's log, one logfmt line per event on stderr (ts=… level=… msg=… key=value …), so
// journald, kubectl logs and log shippers can parse it without configuration.
#pragma once

#include <initializer_list>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace gpuscope::log {

enum class Level { kDebug, kInfo, kWarn, kError };

// "debug", "info", "warn" (or "warning"), "error"; nullopt for anything else.
std::optional<Level> parse_level(std::string_view text);
std::string_view level_name(Level level);

// A key and an already formatted value; the logger quotes and escapes the value when it needs to.
using Field = std::pair<std::string_view, std::string>;

class Logger {
 public:
  Logger(std::ostream& out, Level min_level) : out_(out), min_level_(min_level) {}

  bool enabled(Level level) const { return level >= min_level_; }
  void log(Level level, std::string_view msg, std::initializer_list<Field> fields = {});
  void debug(std::string_view msg, std::initializer_list<Field> fields = {}) { log(Level::kDebug, msg, fields); }
  void info(std::string_view msg, std::initializer_list<Field> fields = {}) { log(Level::kInfo, msg, fields); }
  void warn(std::string_view msg, std::initializer_list<Field> fields = {}) { log(Level::kWarn, msg, fields); }
  void error(std::string_view msg, std::initializer_list<Field> fields = {}) { log(Level::kError, msg, fields); }

 private:
  std::mutex mu_;  // one line at a time from any thread
  std::ostream& out_;
  Level min_level_;
};

// Appends `value` as a logfmt value: bare when it is a non-empty run of safe characters, else quoted
// with \" \\ \n \t escaped and other control bytes as \xNN.
void append_logfmt_value(std::string& line, std::string_view value);

}  // namespace gpuscope::log

#include "log/logger.h"

#include <chrono>

#include <fmt/chrono.h>
#include <fmt/format.h>

namespace gpuscope::log {

std::optional<Level> parse_level(std::string_view text) {
  if (text == "debug") return Level::kDebug;
  if (text == "info") return Level::kInfo;
  if (text == "warn" || text == "warning") return Level::kWarn;
  if (text == "error") return Level::kError;
  return std::nullopt;
}

std::string_view level_name(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

void append_logfmt_value(std::string& line, std::string_view value) {
  bool bare = !value.empty();
  for (unsigned char c : value) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f) {
      bare = false;
      break;
    }
  }
  if (bare) {
    line.append(value);
    return;
  }
  line.push_back('"');
  for (unsigned char c : value) {
    switch (c) {
      case '"': line.append("\\\""); break;
      case '\\': line.append("\\\\"); break;
      case '\n': line.append("\\n"); break;
      case '\t': line.append("\\t"); break;
      default:
        if (c < 0x20 || c == 0x7f) {
          line.append(fmt::format("\\x{:02x}", c));
        } else {
          line.push_back(static_cast<char>(c));
        }
    }
  }
  line.push_back('"');
}

void Logger::log(Level level, std::string_view msg, std::initializer_list<Field> fields) {
  if (!enabled(level)) return;
  const auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  std::string line = fmt::format("ts={:%Y-%m-%dT%H:%M:%S}Z level={} msg=", now, level_name(level));
  append_logfmt_value(line, msg);
  for (const auto& [key, value] : fields) {
    line.push_back(' ');
    line.append(key);
    line.push_back('=');
    append_logfmt_value(line, value);
  }
  line.push_back('\n');
  std::lock_guard lock(mu_);
  out_ << line << std::flush;
}

}  // namespace gpuscope::log

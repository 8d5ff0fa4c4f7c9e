#include "sim/units.h"

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <utility>

namespace gpuscope::sim {
namespace {

struct Unit {
  std::string_view name;
  double factor;
};

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Reads a leading non-negative decimal number; advances `s` past it.
bool take_number(std::string_view& s, double& out) {
  std::size_t n = 0;
  while (n < s.size() && ((s[n] >= '0' && s[n] <= '9') || s[n] == '.')) ++n;
  if (n == 0) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + n, out);
  if (ec != std::errc{} || ptr != s.data() + n || !std::isfinite(out)) return false;
  s.remove_prefix(n);
  return true;
}

// Longest unit name that `s` starts with, so "ms" wins over "m" and "min" over "m".
const Unit* take_unit(std::string_view& s, const auto& units) {
  const Unit* best = nullptr;
  for (const Unit& u : units) {
    if (s.starts_with(u.name) && (best == nullptr || u.name.size() > best->name.size())) best = &u;
  }
  if (best != nullptr) s.remove_prefix(best->name.size());
  return best;
}

constexpr std::array kDurationUnits{Unit{"ms", 1e-3}, Unit{"s", 1.0}, Unit{"m", 60.0}, Unit{"min", 60.0},
                                    Unit{"h", 3600.0}, Unit{"d", 86400.0}};
constexpr std::array kSizeUnits{Unit{"B", 1.0},          Unit{"KiB", 1024.0},        Unit{"MiB", 1048576.0},
                                Unit{"GiB", 1073741824.0}, Unit{"TiB", 1099511627776.0}, Unit{"KB", 1e3},
                                Unit{"MB", 1e6},         Unit{"GB", 1e9},            Unit{"TB", 1e12}};
constexpr std::array kRateTimeUnits{Unit{"s", 1.0}, Unit{"sec", 1.0}, Unit{"m", 60.0}, Unit{"min", 60.0},
                                    Unit{"h", 3600.0}};
constexpr std::array kPowerUnits{Unit{"W", 1.0}, Unit{"kW", 1e3}, Unit{"mW", 1e-3}};

// <number><unit> with one unit, or a bare number taken in base units.
std::expected<double, std::string> parse_single(std::string_view text, const auto& units, std::string_view what,
                                                std::string_view example) {
  std::string_view s = trim(text);
  double value = 0;
  if (!take_number(s, value)) {
    return std::unexpected("bad " + std::string(what) + " " + quoted(text) + " (e.g. " + std::string(example) + ")");
  }
  if (s.empty()) return value;
  const Unit* unit = take_unit(s, units);
  if (unit == nullptr || !s.empty()) {
    return std::unexpected("bad " + std::string(what) + " " + quoted(text) + " (e.g. " + std::string(example) + ")");
  }
  return value * unit->factor;
}

}  // namespace

std::expected<double, std::string> parse_duration(std::string_view text) {
  std::string_view s = trim(text);
  const auto bad = [&] { return std::unexpected("bad duration " + quoted(text) + " (e.g. 500ms, 10s, 5m, 1h30m)"); };
  double total = 0;
  double value = 0;
  if (!take_number(s, value)) return bad();
  if (s.empty()) return value;  // bare seconds
  for (;;) {
    const Unit* unit = take_unit(s, kDurationUnits);
    if (unit == nullptr) return bad();
    total += value * unit->factor;
    if (s.empty()) return total;
    if (!take_number(s, value)) return bad();
  }
}

std::expected<double, std::string> parse_size(std::string_view text) {
  return parse_single(text, kSizeUnits, "size", "60GiB, 512MiB");
}

std::expected<double, std::string> parse_power(std::string_view text) {
  return parse_single(text, kPowerUnits, "power", "350W");
}

std::expected<double, std::string> parse_rate(std::string_view text) {
  const std::string_view s = trim(text);
  const std::size_t slash = s.find('/');
  const auto bad = [&] { return std::unexpected("bad rate " + quoted(text) + " (e.g. 100MiB/min, 1GiB/h)"); };
  if (slash == std::string_view::npos) return bad();
  const auto size = parse_size(s.substr(0, slash));
  if (!size) return bad();
  std::string_view per = trim(s.substr(slash + 1));
  const Unit* unit = take_unit(per, kRateTimeUnits);
  if (unit == nullptr || !per.empty()) return bad();
  return *size / unit->factor;
}

std::expected<std::int64_t, std::string> parse_rfc3339(std::string_view text) {
  const std::string_view s = trim(text);
  const auto bad = [&] {
    return std::unexpected("bad time " + quoted(text) + " (RFC 3339, e.g. 2026-01-01T00:00:00Z)");
  };
  const auto digits = [&](std::size_t pos, std::size_t n, int& out) {
    if (pos + n > s.size()) return false;
    const auto [ptr, ec] = std::from_chars(s.data() + pos, s.data() + pos + n, out);
    return ec == std::errc{} && ptr == s.data() + pos + n;
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (s.size() < 20 || !digits(0, 4, year) || s[4] != '-' || !digits(5, 2, month) || s[7] != '-' ||
      !digits(8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(11, 2, hour) ||
      s[13] != ':' || !digits(14, 2, minute) || s[16] != ':' || !digits(17, 2, second)) {
    return bad();
  }
  std::size_t pos = 19;
  std::int64_t fraction_ns = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::int64_t scale = 100000000;
    const std::size_t begin = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      fraction_ns += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == begin) return bad();
  }
  std::int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh = 0, om = 0;
    if (!digits(pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !digits(pos + 4, 2, om)) return bad();
    offset_s = (s[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size()) return bad();
  const std::chrono::year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                                        std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) return bad();
  const std::int64_t days = std::chrono::sys_days{ymd}.time_since_epoch().count();
  const std::int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  return secs * 1'000'000'000 + fraction_ns;
}

}  // namespace gpuscope::sim

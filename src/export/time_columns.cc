#include "export/time_columns.h"

#include <ctime>

#include <fmt/format.h>

namespace gpuscope::exporter {
namespace {

// Width of each of the Date and Time text columns, the leading '#'/' ' of the first one included.
constexpr std::size_t kTimeColumnsCellWidth = 12;

struct TimeColumnsLocal {
  std::string date;  // 20240104
  std::string time;  // 13:54:35
};

TimeColumnsLocal time_columns_local(std::chrono::system_clock::time_point t) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  localtime_r(&tt, &tm);
  return {fmt::format("{:04}{:02}{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday),
          fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)};
}

// The Date/Time cells of one text line: `first_mark` goes before the first one.
std::string time_columns_text(TimeColumns c, char first_mark, std::string_view date, std::string_view time) {
  std::string out;
  auto add = [&](std::string_view label) {
    std::string cell = out.empty() ? std::string(1, first_mark) : std::string();
    cell += label;
    out += fmt::format("{:<{}}", cell, kTimeColumnsCellWidth);
  };
  if (c.date) add(date);
  if (c.time) add(time);
  return out;
}

}  // namespace

bool parse_time_columns(std::string_view letters, TimeColumns& out) {
  if (letters.empty()) return false;
  TimeColumns c;
  for (char ch : letters) {
    if (ch == 'D') {
      c.date = true;
    } else if (ch == 'T') {
      c.time = true;
    } else {
      return false;
    }
  }
  out = c;
  return true;
}

std::string time_lead_names(TimeColumns c) {
  return c.any() ? time_columns_text(c, '#', "Date", "Time") + "gpu" : "# gpu";
}

std::string time_lead_units(TimeColumns c) {
  return c.any() ? time_columns_text(c, '#', "YYYYMMDD", "HH:MM:SS") + "Idx" : "# Idx";
}

std::string time_lead_row(TimeColumns c, std::chrono::system_clock::time_point t, std::string_view id) {
  if (!c.any()) return fmt::format("{:>5}", id);
  const auto local = time_columns_local(t);
  return time_columns_text(c, ' ', local.date, local.time) + fmt::format("{:>3}", id);
}

std::string time_lead_row(TimeColumns c, std::chrono::system_clock::time_point t, unsigned gpu_index) {
  return time_lead_row(c, t, fmt::format("{}", gpu_index));
}

std::vector<std::string> time_cells_names(TimeColumns c) {
  std::vector<std::string> cells;
  if (c.date) cells.emplace_back("Date");
  if (c.time) cells.emplace_back("Time");
  cells.emplace_back("gpu");
  return cells;
}

std::vector<std::string> time_cells_units(TimeColumns c) {
  std::vector<std::string> cells;
  if (c.date) cells.emplace_back("YYYYMMDD");
  if (c.time) cells.emplace_back("HH:MM:SS");
  cells.emplace_back("Idx");
  return cells;
}

std::vector<std::string> time_cells_row(TimeColumns c, std::chrono::system_clock::time_point t, std::string_view id) {
  std::vector<std::string> cells;
  if (c.any()) {
    const auto local = time_columns_local(t);
    if (c.date) cells.push_back(local.date);
    if (c.time) cells.push_back(local.time);
  }
  cells.emplace_back(id);
  return cells;
}

std::vector<std::string> time_cells_row(TimeColumns c, std::chrono::system_clock::time_point t, unsigned gpu_index) {
  return time_cells_row(c, t, fmt::format("{}", gpu_index));
}

std::string csv_line(char lead, const std::vector<std::string>& cells) {
  std::string line(1, lead);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += ", ";
    line += cells[i];
  }
  line += '\n';
  return line;
}

}  // namespace gpuscope::exporter

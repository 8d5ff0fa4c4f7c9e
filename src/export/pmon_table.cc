#include "export/pmon_table.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gpuscope::exporter {
namespace {

constexpr int kPmonValueWidth = 6;      // each value right-aligned in 6 after a space
constexpr std::size_t kPmonCommandWidth = 15;

std::string pmon_cell(const std::optional<unsigned>& v) {
  return fmt::format(" {:>{}}", v ? fmt::format("{}", *v) : std::string("-"), kPmonValueWidth);
}

std::string pmon_mib_cell(const std::optional<double>& v) {
  return fmt::format(" {:>{}}", v ? fmt::format("{}", std::llround(*v)) : std::string("-"), kPmonValueWidth);
}

// The first 15 bytes, without cutting a UTF-8 sequence in two.
std::string pmon_command(const std::string& name) {
  if (name.empty()) return "-";
  std::size_t end = std::min(name.size(), kPmonCommandWidth);
  while (end > 0 && end < name.size() && (static_cast<unsigned char>(name[end]) & 0xC0) == 0x80) --end;
  return name.substr(0, end);
}

}  // namespace

std::string_view pmon_type(model::ProcessKind kind) {
  switch (kind) {
    case model::ProcessKind::kCompute:
      return "C";
    case model::ProcessKind::kGraphics:
      return "G";
    case model::ProcessKind::kComputeAndGraphics:
      return "C+G";
  }
  return "-";
}

std::expected<PmonTable, UnknownPmonGroup> PmonTable::from_groups(std::string_view letters) {
  if (letters.empty()) return std::unexpected(UnknownPmonGroup{});
  for (char c : letters) {
    if (kAllGroups.find(c) == std::string_view::npos) return std::unexpected(UnknownPmonGroup{std::string(1, c)});
  }
  const auto u = letters.find('u');
  const auto m = letters.find('m');
  return PmonTable(u != std::string_view::npos, m != std::string_view::npos, m < u);
}

std::string PmonTable::header(TimeColumns time) const {
  std::string names = time_lead_names(time) + fmt::format("{:>12}{:>7}", "pid", "type");
  std::string units = time_lead_units(time) + fmt::format("{:>12}{:>7}", "#", "C/G");
  auto add = [&](std::string_view name, std::string_view unit) {
    names += fmt::format(" {:>{}}", name, kPmonValueWidth);
    units += fmt::format(" {:>{}}", unit, kPmonValueWidth);
  };
  auto add_memory = [&] {
    add("fb", "MB");
    add("ccpm", "MB");
  };
  if (memory_ && memory_first_) add_memory();
  if (utilization_) {
    for (std::string_view n : {"sm", "mem", "enc", "dec", "jpg", "ofa"}) add(n, "%");
  }
  if (memory_ && !memory_first_) add_memory();
  return names + "    command \n" + units + "    name \n";
}

std::string PmonTable::rows(TimeColumns time, std::chrono::system_clock::time_point when, unsigned gpu_index,
                            std::span<const PmonProcessRow> processes) const {
  const std::string lead = time_lead_row(time, when, gpu_index);
  if (processes.empty()) {
    std::string line = lead + fmt::format("{:>11}{:>6}", "-", "-");
    const int values = (utilization_ ? 6 : 0) + (memory_ ? 2 : 0);
    for (int i = 0; i < values; ++i) line += fmt::format(" {:>{}}", "-", kPmonValueWidth);
    return line + fmt::format("    {:<{}}\n", "-", kPmonCommandWidth);
  }
  std::string out;
  for (const auto& p : processes) {
    std::string line = lead + fmt::format("{:>11}{:>6}", p.pid, pmon_type(p.kind));
    const std::string memory = memory_ ? pmon_mib_cell(p.fb_mib) + pmon_mib_cell(p.ccpm_mib) : std::string();
    if (memory_first_) line += memory;
    if (utilization_) {
      for (const auto* v : {&p.sm, &p.mem, &p.enc, &p.dec, &p.jpg, &p.ofa}) line += pmon_cell(*v);
    }
    if (!memory_first_) line += memory;
    out += line + fmt::format("    {:<{}}\n", pmon_command(p.command), kPmonCommandWidth);
  }
  return out;
}

}  // namespace gpuscope::exporter

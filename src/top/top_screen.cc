#include "top/top_screen.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/thresholds.h"

namespace gpuscope::top {
namespace {

// Rows each GPU takes in the three layouts, and the process rows kept below them at least (the table's
// header and three processes) before the GPUs are drawn smaller.
constexpr int kFullGpuRows = 5;
constexpr int kCompactGpuRows = 2;
constexpr int kMinProcessRows = 4;
// A metric's sparkline is drawn only where it gets at least this many cells: fewer say nothing of a trend.
constexpr int kMinSparkline = 8;
// The compact layout draws its two bars with sparklines from this width on.
constexpr int kCompactSparklineWidth = 100;
// Within this many degrees of the slowdown temperature the clocks are about to drop.
constexpr double kHotMarginC = 5;
constexpr double kMiBPerGiB = 1024;

// Eighths of a cell, for the bars' last cell.
constexpr std::u32string_view kEighths = U" ▏▎▍▌▋▊▉";

const std::u32string kFull(1, U'█');

std::string percent_text(const std::optional<double>& v) {
  return v ? fmt::format("{:3.0f}%", std::clamp(*v, 0.0, 999.0)) : std::string(" N/A");
}

std::string short_name(std::string_view name) {
  if (name.starts_with("NVIDIA ")) name.remove_prefix(7);
  return std::string(name);
}

std::string memory_text(const GpuFrame& g) {
  const auto& used = g.value(Metric::kMemoryUsedMiB);
  const auto& total = g.value(Metric::kMemoryTotalMiB);
  if (!used) return "N/A";
  if (!total) return fmt::format("{:.1f}G", *used / kMiBPerGiB);
  return fmt::format("{:.1f}/{:.1f}G", *used / kMiBPerGiB, *total / kMiBPerGiB);
}

std::string power_text(const GpuFrame& g) {
  const auto& p = g.value(Metric::kPowerWatts);
  const auto& limit = g.value(Metric::kPowerLimitWatts);
  if (!p) return "N/A";
  if (!limit) return fmt::format("{:.0f}W", *p);
  return fmt::format("{:.0f}/{:.0f}W", *p, *limit);
}

std::optional<double> share_percent(const std::optional<double>& v, const std::optional<double>& of) {
  if (!v || !of || *of <= 0) return std::nullopt;
  return *v / *of * 100;
}

Style temperature_style(const GpuFrame& g, const std::optional<double>& slowdown) {
  const auto& t = g.value(Metric::kTemperatureC);
  if (!t) return Style::kDim;
  if (slowdown && *t >= *slowdown - kHotMarginC) return Style::kBad;
  return Style::kNormal;
}

Style power_style(const GpuFrame& g) {
  const auto share = share_percent(g.value(Metric::kPowerWatts), g.value(Metric::kPowerLimitWatts));
  // At or above the diagnosis' power-cap share of the limit, drawn as at the cap.
  static const double cap_share = analysis::Thresholds{}.power_cap_share;
  return share && *share >= cap_share * 100 ? Style::kWarn : Style::kNormal;
}

Style verdict_style(const VerdictLine& v) {
  if (v.id == "unhealthy") return Style::kBad;
  if (v.id == "compute_bound") return Style::kGood;
  if (v.id == "idle" || v.id == "unknown") return Style::kDim;
  return Style::kWarn;
}

// A bar `width` cells wide filled to `percent` of 100: "[████▌     ]".
void draw_bar(ScreenBuffer& out, int x, int y, int width, const std::optional<double>& percent, Style style) {
  if (width < 3) return;
  const int inner = width - 2;
  out.put(x, y, "[", Style::kDim);
  out.put(x + width - 1, y, "]", Style::kDim);
  if (!percent) return;
  const double eighths = std::clamp(*percent, 0.0, 100.0) / 100.0 * inner * 8;
  const int whole = static_cast<int>(eighths / 8);
  const int rest = static_cast<int>(std::lround(eighths)) - whole * 8;
  for (int i = 0; i < whole && i < inner; ++i) out.put(x + 1 + i, y, kFull, style);
  if (whole < inner && rest > 0 && rest < 8) out.put(x + 1 + whole, y, kEighths.substr(rest, 1), style);
}

// "label [bar] 97% ▁▂▃" in `width` cells: the sparkline gets what the bar leaves, when it is worth drawing.
void draw_metric(ScreenBuffer& out, int x, int y, int width, std::string_view label, int label_width,
                 const std::optional<double>& percent, const std::string& value, const HistoryRing* history,
                 double full_scale, Style style) {
  out.put(x, y, label, Style::kBold);
  const int value_width = static_cast<int>(value.size());
  const int room = width - label_width - value_width - 1;
  if (room < 3) {
    out.put(x + label_width, y, value, style);
    return;
  }
  int bar = room;
  int spark = 0;
  if (history != nullptr && room >= 12 + kMinSparkline) {
    bar = std::clamp(room / 2, 12, 32);
    spark = room - bar - 1;
  }
  draw_bar(out, x + label_width, y, bar, percent, style);
  out.put(x + label_width + bar + 1, y, value, style);
  if (spark >= kMinSparkline) {
    const auto values = history->newest(static_cast<std::size_t>(spark));
    out.put(x + width - spark, y, sparkline(values, static_cast<std::size_t>(spark), full_scale), style);
  }
}

struct GpuDraw {
  const TopModel& model;
  ScreenBuffer& out;
  const GpuFrame& g;
  bool selected;
  int y;
};

// The first row of every layout: marker, index, name, and what is wrong with it when it is down.
int draw_gpu_title(const GpuDraw& d, bool long_name) {
  int x = d.out.put(0, d.y, d.selected ? "▶" : " ", Style::kSelected);
  const std::string name = long_name ? d.g.name : short_name(d.g.name);
  x = d.out.put(x, d.y, fmt::format("{}{} ", long_name ? "GPU " : "", d.g.index), d.selected ? Style::kSelected : Style::kBold);
  x = d.out.put(x, d.y, name, d.selected ? Style::kSelected : Style::kNormal);
  if (!d.g.up) {
    x = d.out.put(x + 2, d.y, fmt::format("LOST: {}", d.g.down_reason.empty() ? "not answering" : d.g.down_reason),
                  Style::kBad);
  }
  return x;
}

// "SM 1980 MHz  MEM 2619 MHz" (the SM clock against its max when it is held down).
std::string clocks_text(const GpuFrame& g) {
  std::string out;
  const auto& sm = g.value(Metric::kSmClockMHz);
  const auto& max_sm = g.value(Metric::kMaxSmClockMHz);
  const auto& mem = g.value(Metric::kMemClockMHz);
  if (sm) out += max_sm && *sm < *max_sm ? fmt::format("SM {:.0f}/{:.0f} MHz", *sm, *max_sm) : fmt::format("SM {:.0f} MHz", *sm);
  if (mem) out += fmt::format("{}MEM {:.0f} MHz", out.empty() ? "" : "  ", *mem);
  return out;
}

std::string temperature_text(const GpuFrame& g) {
  const auto& t = g.value(Metric::kTemperatureC);
  return t ? fmt::format("{:.0f}°C", *t) : std::string("N/A°C");
}

std::optional<double> slowdown_of(const GpuFrame& g) { return g.value(Metric::kSlowdownTempC); }

void draw_verdict(ScreenBuffer& out, int x, int y, const GpuFrame& g) {
  if (!g.verdict) {
    out.put(x, y, "verdict: (collecting readings)", Style::kDim);
    return;
  }
  const auto& v = *g.verdict;
  x = out.put(x, y, "verdict: ", Style::kDim);
  x = out.put(x, y, v.title.empty() ? v.id : v.title, verdict_style(v));
  if (!v.summary.empty()) x = out.put(x, y, " — " + v.summary);
  if (!v.findings.empty()) {
    std::string f;
    for (const auto& id : v.findings) f += (f.empty() ? "" : ", ") + id;
    out.put(x, y, " [" + f + "]", Style::kWarn);
  }
}

// Header, the two lying-or-not bars, tensor and DRAM, memory and power, the verdict.
void draw_full(const GpuDraw& d) {
  auto& out = d.out;
  const auto& g = d.g;
  int x = draw_gpu_title(d, true);
  if (g.up) {
    x = out.put(x + 2, d.y, temperature_text(g), temperature_style(g, slowdown_of(g)));
    x = out.put(x + 2, d.y, clocks_text(g), Style::kNormal);
    if (g.throttle_reasons) {
      const std::string t = throttle_text(*g.throttle_reasons);
      out.put(x + 2, d.y, t.empty() ? "no throttle" : "throttle: " + t, t.empty() ? Style::kDim : Style::kWarn);
    }
  }
  const int half = (out.width() - 3) / 2;
  const int right = 2 + half + 1;
  const auto ring = [&](Metric m) { return &d.model.history(g.index, m); };
  draw_metric(out, 2, d.y + 1, half, "util.gpu", 10, g.value(Metric::kUtilization), percent_text(g.value(Metric::kUtilization)),
              ring(Metric::kUtilization), 100, Style::kUtil);
  draw_metric(out, right, d.y + 1, half, "SM active", 10, g.value(Metric::kSmActive), percent_text(g.value(Metric::kSmActive)),
              ring(Metric::kSmActive), 100, Style::kSm);
  draw_metric(out, 2, d.y + 2, half, "tensor", 10, g.value(Metric::kTensorActive), percent_text(g.value(Metric::kTensorActive)),
              ring(Metric::kTensorActive), 100, Style::kTensor);
  draw_metric(out, right, d.y + 2, half, "DRAM", 10, g.value(Metric::kDramActive), percent_text(g.value(Metric::kDramActive)),
              ring(Metric::kDramActive), 100, Style::kDram);
  const auto mem_total = g.value(Metric::kMemoryTotalMiB).value_or(0);
  draw_metric(out, 2, d.y + 3, half, "memory", 10, share_percent(g.value(Metric::kMemoryUsedMiB), g.value(Metric::kMemoryTotalMiB)),
              fmt::format("{:>13}", memory_text(g)), ring(Metric::kMemoryUsedMiB), mem_total, Style::kMemory);
  const auto power_limit = g.value(Metric::kPowerLimitWatts).value_or(0);
  draw_metric(out, right, d.y + 3, half, "power", 10, share_percent(g.value(Metric::kPowerWatts), g.value(Metric::kPowerLimitWatts)),
              fmt::format("{:>9}", power_text(g)), ring(Metric::kPowerWatts), power_limit,
              power_style(g) == Style::kWarn ? Style::kWarn : Style::kPower);
  draw_verdict(out, 2, d.y + 4, g);
}

// Two rows: the title with temperature, power, memory and the verdict's id; utilization beside SM
// active (with sparklines on a wide terminal), tensor and DRAM as numbers.
void draw_compact(const GpuDraw& d) {
  auto& out = d.out;
  const auto& g = d.g;
  int x = draw_gpu_title(d, false);
  if (g.up) {
    x = std::max(x + 2, 24);
    x = out.put(x, d.y, fmt::format("{:>5}", temperature_text(g)), temperature_style(g, slowdown_of(g)));
    x = out.put(x + 2, d.y, fmt::format("{:>9}", power_text(g)), power_style(g));
    x = out.put(x + 2, d.y, fmt::format("{:>11}", memory_text(g)), Style::kMemory);
    if (g.throttle_reasons && !throttle_text(*g.throttle_reasons).empty()) x = out.put(x + 2, d.y, "throttled", Style::kWarn);
    if (g.verdict) {
      out.put(x + 2, d.y, g.verdict->id, verdict_style(*g.verdict));
    } else {
      out.put(x + 2, d.y, "…", Style::kDim);
    }
  }
  const int y = d.y + 1;
  if (!g.up) return;
  const bool wide = out.width() >= kCompactSparklineWidth;
  const int tail = 20;  // " TC 100%  DRAM 100%"
  const int widget = wide ? (out.width() - 2 - tail - 2) / 2 : 27;
  const auto* util_ring = wide ? &d.model.history(g.index, Metric::kUtilization) : nullptr;
  const auto* sm_ring = wide ? &d.model.history(g.index, Metric::kSmActive) : nullptr;
  draw_metric(out, 2, y, widget, "util", 5, g.value(Metric::kUtilization), percent_text(g.value(Metric::kUtilization)),
              util_ring, 100, Style::kUtil);
  draw_metric(out, 2 + widget + 1, y, widget, "SM", 3, g.value(Metric::kSmActive), percent_text(g.value(Metric::kSmActive)),
              sm_ring, 100, Style::kSm);
  x = 2 + 2 * widget + 2;
  x = out.put(x, y, "TC", Style::kBold);
  x = out.put(x, y, percent_text(g.value(Metric::kTensorActive)), Style::kTensor);
  x = out.put(x + 1, y, "DRAM", Style::kBold);
  out.put(x, y, percent_text(g.value(Metric::kDramActive)), Style::kDram);
}

// One row: every number, no bars.
void draw_line(const GpuDraw& d) {
  auto& out = d.out;
  const auto& g = d.g;
  int x = out.put(0, d.y, d.selected ? "▶" : " ", Style::kSelected);
  x = out.put(x, d.y, fmt::format("{:<2}", g.index), d.selected ? Style::kSelected : Style::kBold);
  if (!g.up) {
    out.put(x + 1, d.y, "LOST: " + (g.down_reason.empty() ? std::string("not answering") : g.down_reason), Style::kBad);
    return;
  }
  x = out.put(x + 1, d.y, "util" + percent_text(g.value(Metric::kUtilization)), Style::kUtil);
  x = out.put(x + 1, d.y, "SM" + percent_text(g.value(Metric::kSmActive)), Style::kSm);
  x = out.put(x + 1, d.y, "TC" + percent_text(g.value(Metric::kTensorActive)), Style::kTensor);
  x = out.put(x + 1, d.y, "DRAM" + percent_text(g.value(Metric::kDramActive)), Style::kDram);
  x = out.put(x + 1, d.y, fmt::format("{:>5}", temperature_text(g)), temperature_style(g, slowdown_of(g)));
  x = out.put(x + 1, d.y, fmt::format("{:>9}", power_text(g)), power_style(g));
  x = out.put(x + 1, d.y, fmt::format("{:>11}", memory_text(g)), Style::kMemory);
  if (g.verdict) out.put(x + 1, d.y, g.verdict->id, verdict_style(*g.verdict));
}

// "{used}/{total}G" of a MIG instance, as memory_text does for a GPU.
std::string instance_memory_text(const MigInstanceFrame& m) {
  if (!m.memory_used_mib) return "N/A";
  if (!m.memory_total_mib) return fmt::format("{:.1f}G", *m.memory_used_mib / kMiBPerGiB);
  return fmt::format("{:.1f}/{:.1f}G", *m.memory_used_mib / kMiBPerGiB, *m.memory_total_mib / kMiBPerGiB);
}

// One row per GPU instance under its GPU: "  ├ 0/1   3g.40gb    SM 62% TC 45% mem  10.0/40.0G  2 procs  compute_bound
// ml/trainer-0" (the instance's own verdict, then its pod).
// A MIG GPU's own utilization is not reported by the driver; what its instances do is shown here.
void draw_instance(ScreenBuffer& out, int y, const GpuFrame& g, std::size_t i) {
  const auto& m = g.mig_instances[i];
  const bool last = i + 1 == g.mig_instances.size();
  int x = out.put(2, y, last ? "└ " : "├ ", Style::kDim);
  x = out.put(x, y, fmt::format("{:<5}", fmt::format("{}/{}", g.index, m.gpu_instance_id)), Style::kBold);
  x = out.put(x + 1, y, fmt::format("{:<10}", m.profile.empty() ? "?" : m.profile), Style::kNormal);
  if (!g.up) return;
  x = out.put(x + 1, y, "SM" + percent_text(m.sm_active), Style::kSm);
  x = out.put(x + 1, y, "TC" + percent_text(m.tensor_active), Style::kTensor);
  x = out.put(x + 1, y, fmt::format("mem {:>11}", instance_memory_text(m)), Style::kMemory);
  const auto procs = std::count_if(g.processes.begin(), g.processes.end(),
                                   [&](const ProcessRow& p) { return p.gpu_instance_id == m.gpu_instance_id; });
  x = out.put(x + 2, y, fmt::format("{} proc{}", procs, procs == 1 ? "" : "s"), procs == 0 ? Style::kDim : Style::kNormal);
  if (m.verdict) x = out.put(x + 2, y, m.verdict->id, verdict_style(*m.verdict));
  if (!m.pod.empty()) out.put(x + 2, y, m.pod, Style::kNormal);
}

// Rows GPU `g` takes with `per_gpu` rows of its own: one more per GPU instance.
int gpu_rows(const GpuFrame& g, int per_gpu) { return per_gpu + static_cast<int>(g.mig_instances.size()); }

// The focused GPU: one metric per row, sparklines as wide as the terminal allows.
int draw_focus(const TopModel& model, ScreenBuffer& out, const GpuFrame& g, int y, int rows) {
  const GpuDraw d{model, out, g, true, y};
  int x = draw_gpu_title(d, true);
  out.put(x + 2, y, g.uuid, Style::kDim);
  const int w = out.width() - 2;
  struct Row {
    const char* label;
    Metric metric;
    std::optional<double> percent;
    std::string value;
    double full_scale;
    Style style;
  };
  const std::vector<Row> metrics = {
      {"util.gpu", Metric::kUtilization, g.value(Metric::kUtilization), percent_text(g.value(Metric::kUtilization)), 100, Style::kUtil},
      {"SM active", Metric::kSmActive, g.value(Metric::kSmActive), percent_text(g.value(Metric::kSmActive)), 100, Style::kSm},
      {"tensor", Metric::kTensorActive, g.value(Metric::kTensorActive), percent_text(g.value(Metric::kTensorActive)), 100, Style::kTensor},
      {"DRAM", Metric::kDramActive, g.value(Metric::kDramActive), percent_text(g.value(Metric::kDramActive)), 100, Style::kDram},
      {"memory", Metric::kMemoryUsedMiB, share_percent(g.value(Metric::kMemoryUsedMiB), g.value(Metric::kMemoryTotalMiB)),
       fmt::format("{:>13}", memory_text(g)), g.value(Metric::kMemoryTotalMiB).value_or(0), Style::kMemory},
      {"power", Metric::kPowerWatts, share_percent(g.value(Metric::kPowerWatts), g.value(Metric::kPowerLimitWatts)),
       fmt::format("{:>13}", power_text(g)), g.value(Metric::kPowerLimitWatts).value_or(0), Style::kPower},
  };
  int row = y + 1;
  for (const auto& m : metrics) {
    if (row >= y + rows) return row - y;
    draw_metric(out, 2, row++, w, m.label, 11, g.up ? m.percent : std::nullopt, g.up ? m.value : std::string(" N/A"),
                &model.history(g.index, m.metric), m.full_scale, m.style);
  }
  if (row < y + rows && g.up) {
    x = out.put(2, row, "temp ", Style::kBold);
    x = out.put(x, row, temperature_text(g), temperature_style(g, slowdown_of(g)));
    x = out.put(x + 3, row, clocks_text(g));
    const std::string t = g.throttle_reasons ? throttle_text(*g.throttle_reasons) : "";
    out.put(x + 3, row++, t.empty() ? "no throttle" : "throttle: " + t, t.empty() ? Style::kDim : Style::kWarn);
  }
  if (row < y + rows) draw_verdict(out, 2, row++, g);
  for (std::size_t i = 0; i < g.mig_instances.size() && row < y + rows; ++i) draw_instance(out, row++, g, i);
  return row - y;
}

std::string memory_column(const std::optional<std::uint64_t>& bytes) {
  if (!bytes) return "N/A";
  const double mib = static_cast<double>(*bytes) / (1024.0 * 1024.0);
  return mib >= 10 * kMiBPerGiB ? fmt::format("{:.1f}GiB", mib / kMiBPerGiB) : fmt::format("{:.0f}MiB", mib);
}

void draw_processes(const TopModel& model, ScreenBuffer& out, int y, int rows, const std::string& gpus_shown) {
  if (rows <= 0) return;
  const auto procs = model.process_rows();
  const auto mark = [&](SortKey k) { return model.sort() == k ? "▼" : " "; };
  const std::string header = fmt::format("{:>7}{} {:<10} {:>4} {:>9}{} {:>4}{}  COMMAND", "PID", mark(SortKey::kPid), "USER",
                                         "GPU", "GPU MEM", mark(SortKey::kMemory), "SM%", mark(SortKey::kSmPercent));
  out.put(0, y, std::u32string(static_cast<std::size_t>(out.width()), U' '), Style::kHeader);
  out.put(0, y, header, Style::kHeader);
  // What the table holds, right-aligned, as much of it as fits beside the column names.
  std::string scope = model.focused() && model.selected_gpu() != nullptr
                          ? fmt::format("GPU {} only", model.selected_gpu()->index)
                          : std::string("all GPUs");
  if (!model.user_filter().empty()) scope += ", user " + model.user_filter();
  const std::string count = fmt::format("{}{} process{}", gpus_shown.empty() ? "" : gpus_shown + " · ", procs.size(),
                                        procs.size() == 1 ? "" : "es");
  const int header_end = static_cast<int>(cell_text(header).size()) + 2;
  for (const std::string& text : {count + ", " + scope + " ", count + " "}) {
    const int x = out.width() - static_cast<int>(cell_text(text).size());
    if (x < header_end) continue;
    out.put(x, y, text, Style::kHeader);
    break;
  }
  const int shown = std::min<int>(static_cast<int>(procs.size()), rows - 1);
  const bool cut = shown < static_cast<int>(procs.size());
  for (int i = 0; i < shown; ++i) {
    const auto& p = procs[static_cast<std::size_t>(i)];
    const int row = y + 1 + i;
    if (cut && i == shown - 1) {
      out.put(0, row, fmt::format("{:>7}  … {} more", "", procs.size() - static_cast<std::size_t>(shown) + 1), Style::kDim);
      break;
    }
    const bool of_selected = model.selected_gpu() != nullptr && model.selected_gpu()->index == p.gpu;
    const std::string sm = p.sm_percent ? fmt::format("{:.0f}", *p.sm_percent) : std::string("N/A");
    // A MIG process names its GPU instance: "0/1".
    const std::string where = p.gpu_instance_id ? fmt::format("{}/{}", p.gpu, *p.gpu_instance_id) : fmt::format("{}", p.gpu);
    const int x = out.put(0, row, fmt::format("{:>7}  {:<10.10} {:>4} {:>9}  {:>4}   ", p.pid, p.user.empty() ? "-" : p.user,
                                              where, memory_column(p.memory_bytes), sm),
                          of_selected ? Style::kBold : Style::kNormal);
    out.put(x, row, p.command);
  }
  if (procs.empty()) {
    out.put(2, y + 1, model.user_filter().empty() ? "no processes on the GPUs" : "no processes of this user", Style::kDim);
  }
}

void draw_header(const TopModel& model, const SourceView& source, ScreenBuffer& out) {
  const Frame* f = model.latest();
  out.put(0, 0, std::u32string(static_cast<std::size_t>(out.width()), U' '), Style::kTitle);
  std::string title = "gpuscope top";
  if (f != nullptr) title += fmt::format("  {}  {} GPU{}", f->host, f->gpus.size(), f->gpus.size() == 1 ? "" : "s");
  title += "  " + source.source;
  out.put(0, 0, title, Style::kTitle);
  out.put(out.width() - static_cast<int>(source.clock_text.size()), 0, source.clock_text, Style::kTitle);

  int x = 0;
  if (model.paused()) x = out.put(x, 1, "PAUSED ", Style::kWarn);
  if (!source.error.empty()) {
    x = out.put(x, 1, "error: " + source.error, Style::kBad);
    if (source.age_seconds) x = out.put(x, 1, fmt::format(" (shown: {:.0f} s old)", *source.age_seconds), Style::kBad);
  } else if (source.reading_for_seconds) {
    x = out.put(x, 1, fmt::format("reading… {:.1f} s (the source is slow)", *source.reading_for_seconds), Style::kWarn);
  } else if (!source.age_seconds) {
    x = out.put(x, 1, "reading…", Style::kDim);
  } else {
    x = out.put(x, 1, fmt::format("reading {:.1f} s ago", *source.age_seconds), Style::kDim);
  }
  const std::string user = model.user_filter().empty() ? "" : " · user " + model.user_filter();
  const std::string right = fmt::format("every {:g} s · sort {}{} · h help · q quit",
                                        static_cast<double>(source.interval.count()) / 1000.0, sort_key_name(model.sort()), user);
  const int rx = out.width() - static_cast<int>(cell_text(right).size());
  if (rx > x + 1) out.put(rx, 1, right, Style::kDim);
}

void draw_help(ScreenBuffer& out) {
  const auto& lines = key_help();
  int key_width = 0, text_width = 0;
  for (const auto& l : lines) {
    key_width = std::max(key_width, static_cast<int>(cell_text(l.keys).size()));
    text_width = std::max(text_width, static_cast<int>(cell_text(l.action).size()));
  }
  const int w = std::min(out.width() - 2, key_width + text_width + 6);
  const int h = static_cast<int>(lines.size()) + 4;
  const int x0 = (out.width() - w) / 2;
  const int y0 = std::max(0, (out.height() - h) / 2);
  const std::u32string blank(static_cast<std::size_t>(w), U' ');
  for (int y = y0; y < y0 + h && y < out.height(); ++y) out.put(x0, y, blank, Style::kHeader);
  out.put(x0 + 2, y0 + 1, "gpuscope top: keys", Style::kHeader);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int y = y0 + 2 + static_cast<int>(i);
    out.put(x0 + 2, y, lines[i].keys, Style::kHeader);
    // Clipped to the box: the help never spills over its frame on a narrow terminal.
    auto action = cell_text(lines[i].action);
    const int room = w - key_width - 5;
    if (room > 0 && static_cast<int>(action.size()) > room) action.resize(static_cast<std::size_t>(room));
    out.put(x0 + 3 + key_width, y, action, Style::kHeader);
  }
}

}  // namespace

void draw_screen(const TopModel& model, const ViewState& view, const SourceView& source, ScreenBuffer& out) {
  if (out.width() < kMinWidth || out.height() < kMinHeight) {
    out.put(0, 0, fmt::format("too small: {}x{} (top needs {}x{})", out.width(), out.height(), kMinWidth, kMinHeight),
            Style::kBad);
    out.put(0, 1, "q quits", Style::kDim);
    return;
  }
  draw_header(model, source, out);
  const Frame* f = model.latest();
  int y = 2;
  std::string gpus_shown;  // "GPUs 2-7 of 8" when they do not all fit
  const int bottom = out.height() - (view.user_prompt ? 1 : 0);
  if (f != nullptr && !f->gpus.empty()) {
    if (model.focused() && model.selected_gpu() != nullptr) {
      y += draw_focus(model, out, *model.selected_gpu(), y, std::max(1, bottom - y - kMinProcessRows));
    } else {
      const int n = static_cast<int>(f->gpus.size());
      const int space = bottom - y - kMinProcessRows;
      // Each GPU in MIG mode takes a row more per GPU instance, in every layout.
      const auto total_rows = [&](int per) {
        int sum = 0;
        for (const auto& g : f->gpus) sum += gpu_rows(g, per);
        return sum;
      };
      const int per_gpu = total_rows(kFullGpuRows) <= space      ? kFullGpuRows
                          : total_rows(kCompactGpuRows) <= space ? kCompactGpuRows
                                                                 : 1;
      const auto rows_of = [&](int i) { return gpu_rows(f->gpus[static_cast<std::size_t>(i)], per_gpu); };
      // Scrolled so the selected GPU is always drawn: up to half the room above it, the rest below, then
      // above again with what the last GPUs left.
      const int sel = std::clamp(static_cast<int>(model.selected()), 0, n - 1);
      int first = sel, last = sel, above = 0;
      while (first > 0 && above + rows_of(first - 1) <= space / 2) above += rows_of(--first);
      int used = above + rows_of(sel);
      while (last + 1 < n && used + rows_of(last + 1) <= space) used += rows_of(++last);
      while (first > 0 && used + rows_of(first - 1) <= space) used += rows_of(--first);
      const int fits = last - first + 1;
      for (int i = first; i <= last; ++i) {
        const auto& g = f->gpus[static_cast<std::size_t>(i)];
        const GpuDraw d{model, out, g, i == sel, y};
        if (per_gpu == kFullGpuRows) {
          draw_full(d);
        } else if (per_gpu == kCompactGpuRows) {
          draw_compact(d);
        } else {
          draw_line(d);
        }
        y += per_gpu;
        for (std::size_t k = 0; k < g.mig_instances.size() && y < bottom; ++k) draw_instance(out, y++, g, k);
      }
      if (fits < n) gpus_shown = fmt::format("GPUs {}-{} of {}", first, last, n);
    }
  } else if (f != nullptr) {
    out.put(2, y++, "no GPUs", Style::kDim);
  }
  draw_processes(model, out, y, bottom - y, gpus_shown);
  if (view.user_prompt) {
    out.put(0, out.height() - 1, "show the processes of user (empty: all): " + *view.user_prompt + "_", Style::kBold);
  }
  if (view.help) draw_help(out);
}

}  // namespace gpuscope::top

#include "trace/report_units.h"
#include "trace/trace_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace gpuscope::trace {
namespace {

// Counts per unit that differ by less than this share are the same count: a per-step count of 3 over
// 10 steps and 3 over 12 steps are both 3, but 30/10 and 31/10 are not.
constexpr double kDiffSameCountShare = 0.005;
// A mean duration per call within this share of the other side's is "the same duration": the row's
// change is then told as a change of count alone.
constexpr double kDiffSameMeanShare = 0.05;
// Names are cut to this in explanations (kernel names run to hundreds of characters).
constexpr std::size_t kDiffNameWidth = 80;

// "1 call/step", "3 calls/step", "0.25 calls/step".
std::string diff_calls(double n, const std::string& per) {
  return fmt::format("{} call{}{}", count_text(n), count_text(n) == "1" ? "" : "s", per);
}

std::string diff_short_name(const std::string& name) {
  return name.size() <= kDiffNameWidth ? name : name.substr(0, kDiffNameWidth - 3) + "...";
}

bool diff_same_count(double a, double b) { return std::abs(a - b) <= kDiffSameCountShare * std::max(std::abs(a), std::abs(b)); }

double diff_mean(double ns, double count) { return count > 0 ? ns / count : 0; }

std::int64_t diff_median_of(std::vector<std::int64_t> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Every kernel of every rank (the kernel summaries), or the top kernels where there are no summaries.
std::vector<NamedCost> diff_kernel_costs(const TraceReport& report) {
  std::map<std::string, NamedCost, std::less<>> by_name;
  auto add = [&](const std::string& name, std::uint64_t count, std::int64_t total_ns) {
    NamedCost& c = by_name[name];
    c.name = name;
    c.count += count;
    c.total_ns += total_ns;
  };
  if (!report.kernel_summaries.empty()) {
    for (const auto& summary : report.kernel_summaries) {
      for (const auto& row : summary.rows) add(row.name, row.instances, row.total_ns);
    }
  } else {
    for (const auto& r : report.ranks) {
      for (const auto& d : r.devices) {
        for (const auto& k : d.top_kernels) add(k.name, k.count, k.total_ns);
      }
    }
  }
  std::vector<NamedCost> rows;
  rows.reserve(by_name.size());
  for (auto& [name, cost] : by_name) rows.push_back(std::move(cost));
  return rows;
}

struct DiffDivisors {
  DiffUnit unit = DiffUnit::kStep;
  double before = 1, after = 1;
};

double diff_divisor_of(const DiffSide& side, DiffUnit unit) {
  switch (unit) {
    case DiffUnit::kStep: return static_cast<double>(side.steps);
    case DiffUnit::kSecond: return static_cast<double>(side.span_ns) / 1e9;
    case DiffUnit::kTrace: return static_cast<double>(std::max<std::size_t>(side.ranks, 1));
  }
  return 1;
}

bool diff_unit_possible(const DiffSide& side, DiffUnit unit) {
  switch (unit) {
    case DiffUnit::kStep: return side.every_rank_has_steps && side.steps > 0;
    case DiffUnit::kSecond: return side.span_ns > 0;
    case DiffUnit::kTrace: return true;
  }
  return false;
}

std::string diff_unit_description_of(const TraceDiff& diff) {
  const auto& b = diff.before;
  const auto& a = diff.after;
  const bool ranks = b.ranks > 1 || a.ranks > 1;
  switch (diff.unit) {
    case DiffUnit::kStep:
      return fmt::format("per step: totals divided by the ProfilerStep count (BEFORE {} steps, AFTER {}){}", b.steps, a.steps,
                         ranks ? "; steps of all ranks, so per step of one rank" : "");
    case DiffUnit::kSecond:
      return fmt::format("per second of trace span (BEFORE {}, AFTER {}){}", duration_text(static_cast<double>(b.span_ns)),
                         duration_text(static_cast<double>(a.span_ns)), ranks ? "; spans of all ranks summed" : "");
    case DiffUnit::kTrace:
      return ranks ? fmt::format("per trace of one rank (BEFORE {} ranks, AFTER {})", b.ranks, a.ranks)
                   : std::string("per whole trace");
  }
  return {};
}

std::string diff_explain(const NamedDelta& d, const std::string& kind, DiffUnit unit) {
  const std::string per = diff_unit_suffix(unit);
  const std::string head = fmt::format("{}{}: {} `{}`", signed_duration_text(d.delta_ns()), per, kind, diff_short_name(d.name));
  const double before_mean = diff_mean(d.before_ns, d.before_count);
  const double after_mean = diff_mean(d.after_ns, d.after_count);
  switch (d.change) {
    case ChangeKind::kAdded:
      return fmt::format("{} is new ({}, {} each)", head, diff_calls(d.after_count, per), duration_text(after_mean));
    case ChangeKind::kRemoved:
      return fmt::format("{} is gone (was {}, {} each)", head, diff_calls(d.before_count, per), duration_text(before_mean));
    case ChangeKind::kUnchanged: return fmt::format("{} is unchanged", head);
    case ChangeKind::kChanged: break;
  }
  const bool same_count = diff_same_count(d.before_count, d.after_count);
  const std::string counts = fmt::format("{} time{}{} instead of {}", count_text(d.after_count),
                                         count_text(d.after_count) == "1" ? "" : "s", per, count_text(d.before_count));
  const bool same_mean = std::abs(after_mean - before_mean) <= kDiffSameMeanShare * std::max(before_mean, after_mean);
  if (d.before_kernels_per_call > 0 && d.after_kernels_per_call > 0 &&
      !diff_same_count(d.before_kernels_per_call, d.after_kernels_per_call)) {
    return fmt::format("{} now launches {} kernels instead of {}{}{}", head, count_text(d.after_kernels_per_call),
                       count_text(d.before_kernels_per_call),
                       same_mean ? ""
                                 : fmt::format(" ({} instead of {} of GPU time per call)", duration_text(after_mean),
                                               duration_text(before_mean)),
                       same_count ? "" : fmt::format(", and runs {}", counts));
  }
  const std::string means = fmt::format("{} instead of {} per call", duration_text(after_mean), duration_text(before_mean));
  if (same_count) {
    const double factor = before_mean > 0 && after_mean > 0 ? after_mean / before_mean : 1;
    const std::string speed =
        factor >= 1 ? fmt::format("takes {:.2f}x as long", factor) : fmt::format("is {:.2f}x faster", 1 / factor);
    return fmt::format("{} {} ({}, {})", head, speed, means, diff_calls(d.after_count, per));
  }
  if (same_mean) return fmt::format("{} runs {} ({} each)", head, counts, duration_text(after_mean));
  return fmt::format("{} runs {}, {}", head, counts, means);
}

NamedDelta diff_delta_of(const std::string& name, const NamedCost* b, const NamedCost* a, const DiffDivisors& div) {
  NamedDelta d;
  d.name = name;
  if (b != nullptr) {
    d.before_total_count = b->count;
    d.before_total_ns = b->total_ns;
    d.before_count = static_cast<double>(b->count) / div.before;
    d.before_ns = static_cast<double>(b->total_ns) / div.before;
    if (b->launched_kernels > 0 && b->count > 0) {
      d.before_kernels_per_call = static_cast<double>(b->launched_kernels) / static_cast<double>(b->count);
    }
  }
  if (a != nullptr) {
    d.after_total_count = a->count;
    d.after_total_ns = a->total_ns;
    d.after_count = static_cast<double>(a->count) / div.after;
    d.after_ns = static_cast<double>(a->total_ns) / div.after;
    if (a->launched_kernels > 0 && a->count > 0) {
      d.after_kernels_per_call = static_cast<double>(a->launched_kernels) / static_cast<double>(a->count);
    }
  }
  if (b == nullptr) {
    d.change = ChangeKind::kAdded;
  } else if (a == nullptr) {
    d.change = ChangeKind::kRemoved;
  } else if (d.before_count == d.after_count && d.before_ns == d.after_ns &&
             d.before_kernels_per_call == d.after_kernels_per_call) {
    d.change = ChangeKind::kUnchanged;
  } else {
    d.change = ChangeKind::kChanged;
  }
  return d;
}

void diff_finish_table(TableDiff& t, const std::string& word, DiffUnit unit) {
  for (auto& d : t.rows) {
    if (d.explanation.empty()) d.explanation = diff_explain(d, word, unit);
    switch (d.change) {
      case ChangeKind::kAdded: ++t.added; break;
      case ChangeKind::kRemoved: ++t.removed; break;
      case ChangeKind::kChanged: ++t.changed; break;
      case ChangeKind::kUnchanged: ++t.unchanged; break;
    }
  }
  std::stable_sort(t.rows.begin(), t.rows.end(), [](const NamedDelta& x, const NamedDelta& y) {
    const bool xu = x.change == ChangeKind::kUnchanged, yu = y.change == ChangeKind::kUnchanged;
    if (xu != yu) return yu;
    const double ax = std::abs(x.delta_ns()), ay = std::abs(y.delta_ns());
    if (ax != ay) return ax > ay;
    if (x.after_ns + x.before_ns != y.after_ns + y.before_ns) return x.after_ns + x.before_ns > y.after_ns + y.before_ns;
    return x.name < y.name;
  });
}

// The word explanations name a row's kind by: "kernel", "op", ...
std::string diff_kind_word(const std::string& kind) {
  if (kind == "kernel_family") return "kernels";
  if (kind == "op_cpu") return "op (CPU time)";
  return kind;
}

TableDiff diff_table(const NamedTable* before, const NamedTable* after, const DiffDivisors& div) {
  TableDiff t;
  const NamedTable& any = before != nullptr ? *before : *after;
  t.kind = any.kind;
  t.title = any.title;
  std::map<std::string, std::pair<const NamedCost*, const NamedCost*>, std::less<>> names;
  if (before != nullptr) {
    for (const auto& c : before->rows) names[c.name].first = &c;
  }
  if (after != nullptr) {
    for (const auto& c : after->rows) names[c.name].second = &c;
  }
  t.rows.reserve(names.size());
  for (const auto& [name, pair] : names) t.rows.push_back(diff_delta_of(name, pair.first, pair.second, div));
  diff_finish_table(t, diff_kind_word(t.kind), div.unit);
  return t;
}

// Kernels grouped by family, kept only where the grouping says something the exact names do not: a
// family on both sides with a name on one side only (another template instance, another tile shape).
std::optional<TableDiff> diff_family_table(const TableDiff& kernels, const DiffDivisors& div) {
  struct Family {
    NamedCost before, after;
    bool on_before = false, on_after = false, renamed = false;
    std::vector<std::pair<std::string, std::string>> members;
  };
  std::map<std::string, Family> families;
  for (const auto& k : kernels.rows) {
    Family& f = families[kernel_family(k.name)];
    f.before.count += k.before_total_count;
    f.before.total_ns += k.before_total_ns;
    f.after.count += k.after_total_count;
    f.after.total_ns += k.after_total_ns;
    f.on_before = f.on_before || k.change != ChangeKind::kAdded;
    f.on_after = f.on_after || k.change != ChangeKind::kRemoved;
    f.renamed = f.renamed || k.change == ChangeKind::kAdded || k.change == ChangeKind::kRemoved;
    f.members.emplace_back(k.name, k.change == ChangeKind::kAdded ? ">" : k.change == ChangeKind::kRemoved ? "<" : "=");
  }
  TableDiff t;
  t.kind = "kernel_family";
  t.title = "kernel families";
  t.note =
      "kernels grouped by name up to template arguments, parameter lists and numbers, shown only for families where a "
      "name is on one side only (another template instance or tile shape replaced it)";
  for (auto& [family, f] : families) {
    if (!f.on_before || !f.on_after || !f.renamed || f.members.size() < 2) continue;
    f.before.name = f.after.name = family;
    NamedDelta d = diff_delta_of(family, &f.before, &f.after, div);
    std::sort(f.members.begin(), f.members.end());
    d.members = std::move(f.members);
    std::vector<std::string> gone, came;
    for (const auto& [name, side] : d.members) {
      if (side == "<") gone.push_back("`" + diff_short_name(name) + "`");
      if (side == ">") came.push_back("`" + diff_short_name(name) + "`");
    }
    std::string what;
    if (!came.empty() && !gone.empty()) {
      what = fmt::format("{} in place of {}", fmt::join(came, ", "), fmt::join(gone, ", "));
    } else if (!came.empty()) {
      what = fmt::format("{} added beside the others", fmt::join(came, ", "));
    } else {
      what = fmt::format("{} gone, the others stay", fmt::join(gone, ", "));
    }
    d.explanation = fmt::format("{}{}: kernels `{}` (one family up to template arguments and numbers): {}",
                                signed_duration_text(d.delta_ns()), diff_unit_suffix(div.unit), diff_short_name(family), what);
    t.rows.push_back(std::move(d));
  }
  if (t.rows.empty()) return std::nullopt;
  diff_finish_table(t, "kernels", div.unit);
  return t;
}

void diff_add_metric(TraceDiff& diff, std::string key, std::string label, MetricDelta::Unit unit, bool per_unit, double before,
                     double after) {
  MetricDelta m;
  m.key = std::move(key);
  m.label = std::move(label);
  m.unit = unit;
  m.per_unit = per_unit;
  m.before = per_unit ? before / diff.before_divisor : before;
  m.after = per_unit ? after / diff.after_divisor : after;
  diff.metrics.push_back(std::move(m));
}

void diff_add_metrics(TraceDiff& diff) {
  const auto& b = diff.before;
  const auto& a = diff.after;
  using U = MetricDelta::Unit;
  auto d = [](std::int64_t v) { return static_cast<double>(v); };
  if (b.steps > 0 && a.steps > 0) {
    diff_add_metric(diff, "step_median", "step time, median", U::kNanoseconds, false, d(b.step_median_ns), d(a.step_median_ns));
    diff_add_metric(diff, "step_mean", "step time, mean", U::kNanoseconds, false, d(b.step_mean_ns), d(a.step_mean_ns));
  }
  diff_add_metric(diff, "steps", "profiler steps", U::kCount, false, static_cast<double>(b.steps), static_cast<double>(a.steps));
  diff_add_metric(diff, "gpu_window", "GPU active window", U::kNanoseconds, true, d(b.window_ns), d(a.window_ns));
  diff_add_metric(diff, "busy", "GPU busy", U::kNanoseconds, true, d(b.busy_ns), d(a.busy_ns));
  diff_add_metric(diff, "idle", "GPU idle", U::kNanoseconds, true, d(b.window_ns - b.busy_ns), d(a.window_ns - a.busy_ns));
  diff_add_metric(diff, "host_wait", "  host wait", U::kNanoseconds, true, d(b.idle.host_wait_ns), d(a.idle.host_wait_ns));
  diff_add_metric(diff, "kernel_wait", "  kernel wait", U::kNanoseconds, true, d(b.idle.kernel_wait_ns),
                  d(a.idle.kernel_wait_ns));
  diff_add_metric(diff, "other_idle", "  other", U::kNanoseconds, true, d(b.idle.other_ns), d(a.idle.other_ns));
  diff_add_metric(diff, "busy_share", "GPU busy share of window", U::kRatio, false, ratio(b.busy_ns, b.window_ns),
                  ratio(a.busy_ns, a.window_ns));
  diff_add_metric(diff, "computation", "computation", U::kNanoseconds, true, d(b.computation_ns), d(a.computation_ns));
  diff_add_metric(diff, "communication", "communication (NCCL)", U::kNanoseconds, true, d(b.communication_ns),
                  d(a.communication_ns));
  diff_add_metric(diff, "memory", "memcpy + memset", U::kNanoseconds, true, d(b.memory_ns), d(a.memory_ns));
  diff_add_metric(diff, "kernel_time", "kernel time", U::kNanoseconds, true, d(b.kernel_ns), d(a.kernel_ns));
  diff_add_metric(diff, "kernels", "kernels launched", U::kCount, true, static_cast<double>(b.kernel_count),
                  static_cast<double>(a.kernel_count));
  diff_add_metric(diff, "runtime_calls", "CUDA runtime calls", U::kCount, true, static_cast<double>(b.runtime_calls),
                  static_cast<double>(a.runtime_calls));
}

void diff_add_warnings(TraceDiff& diff, const TableDiff* kernels) {
  const auto& b = diff.before;
  const auto& a = diff.after;
  if (b.kernel_count == 0) diff.warnings.push_back("BEFORE has no GPU kernels: every kernel of AFTER shows as added");
  if (a.kernel_count == 0) diff.warnings.push_back("AFTER has no GPU kernels: every kernel of BEFORE shows as removed");
  if (kernels != nullptr && b.kernel_count > 0 && a.kernel_count > 0 && kernels->changed + kernels->unchanged == 0) {
    std::set<std::string> before_families, shared_families;
    for (const auto& k : kernels->rows) {
      if (k.change == ChangeKind::kRemoved) before_families.insert(kernel_family(k.name));
    }
    for (const auto& k : kernels->rows) {
      if (k.change == ChangeKind::kAdded && before_families.contains(kernel_family(k.name)))
        shared_families.insert(kernel_family(k.name));
    }
    diff.warnings.push_back(fmt::format(
        "BEFORE and AFTER have no kernel name in common ({} and {} distinct kernels{}): they look like different programs, so "
        "every kernel shows as added or removed",
        kernels->removed, kernels->added,
        shared_families.empty()
            ? std::string(", nor a family up to template arguments and numbers")
            : fmt::format("; {} families in common up to template arguments and numbers", shared_families.size())));
  }
  if (!b.device_names.empty() && !a.device_names.empty() && b.device_names != a.device_names) {
    diff.warnings.push_back(fmt::format("the GPUs differ (BEFORE {}, AFTER {}): kernel times compare different hardware",
                                        fmt::join(b.device_names, " + "), fmt::join(a.device_names, " + ")));
  }
  if (b.world_size && a.world_size && *b.world_size != *a.world_size) {
    diff.warnings.push_back(fmt::format("the world sizes differ (BEFORE {}, AFTER {}): the work per rank is not the same job's",
                                        *b.world_size, *a.world_size));
  }
  if (b.ranks != a.ranks) {
    diff.warnings.push_back(fmt::format(
        "BEFORE has {} rank file(s), AFTER {}: figures are per rank, averaged over each side's ranks", b.ranks, a.ranks));
  }
  if (b.steps > 0 && a.steps == 0) diff.warnings.push_back("AFTER has no ProfilerStep annotations: step time is not compared");
  if (b.steps == 0 && a.steps > 0) diff.warnings.push_back("BEFORE has no ProfilerStep annotations: step time is not compared");
}

}  // namespace

std::string diff_unit_key(DiffUnit unit) {
  switch (unit) {
    case DiffUnit::kStep: return "step";
    case DiffUnit::kSecond: return "second";
    case DiffUnit::kTrace: return "trace";
  }
  return "?";
}

std::string diff_unit_suffix(DiffUnit unit) {
  switch (unit) {
    case DiffUnit::kStep: return "/step";
    case DiffUnit::kSecond: return "/s";
    case DiffUnit::kTrace: return "/trace";
  }
  return "";
}

std::string change_kind_key(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded: return "added";
    case ChangeKind::kRemoved: return "removed";
    case ChangeKind::kChanged: return "changed";
    case ChangeKind::kUnchanged: return "unchanged";
  }
  return "?";
}

std::string kernel_family(const std::string& name) {
  std::string_view s = name;
  if (s.starts_with("void ")) s.remove_prefix(5);
  std::string out;
  out.reserve(s.size());
  int angle = 0, paren = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' && paren == 0) {
      if (angle++ == 0) out += "<...>";
      continue;
    }
    if (c == '>' && angle > 0 && paren == 0) {
      --angle;
      continue;
    }
    if (angle > 0) continue;
    if (c == '(') {
      if (paren++ == 0) out += "(...)";
      continue;
    }
    if (c == ')' && paren > 0) {
      --paren;
      continue;
    }
    if (paren > 0) continue;
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      out += '#';
      while (i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])) != 0) ++i;
      continue;
    }
    out += c;
  }
  return out;
}

DiffSide diff_side(const TraceReport& report, const std::string& path) {
  DiffSide side;
  side.path = path;
  side.ranks = report.ranks.size();
  side.world_size = report.comparison.world_size;
  side.every_rank_has_steps = !report.ranks.empty();
  std::set<std::string> names;
  std::vector<std::int64_t> medians;
  std::int64_t step_sum = 0;
  std::map<std::string, NamedCost, std::less<>> transfers;
  for (const auto& r : report.ranks) {
    if (!side.world_size && r.world_size) side.world_size = r.world_size;
    side.steps += r.steps.count;
    step_sum += r.steps.mean_ns * static_cast<std::int64_t>(r.steps.count);
    if (r.steps.count > 0) {
      medians.push_back(r.steps.median_ns);
    } else {
      side.every_rank_has_steps = false;
    }
    side.span_ns += r.span_ns();
    side.runtime_calls += r.runtime_calls;
    for (const auto& d : r.devices) {
      ++side.devices;
      if (!d.name.empty()) names.insert(d.name);
      side.window_ns += d.window_ns();
      side.busy_ns += d.busy_ns;
      side.idle.host_wait_ns += d.idle.host_wait_ns;
      side.idle.kernel_wait_ns += d.idle.kernel_wait_ns;
      side.idle.other_ns += d.idle.other_ns;
      side.computation_ns += d.computation_ns;
      side.communication_ns += d.communication_ns;
      side.memory_ns += d.memory_ns;
      side.kernel_count += d.kernel_count;
      side.kernel_ns += d.kernel_total_ns;
      for (const auto& t : d.transfers) {
        NamedCost& c = transfers[t.direction];
        c.name = t.direction;
        c.count += t.count;
        c.total_ns += t.duration_ns;
      }
    }
  }
  side.device_names.assign(names.begin(), names.end());
  side.step_median_ns = diff_median_of(std::move(medians));
  side.step_mean_ns = side.steps > 0 ? step_sum / static_cast<std::int64_t>(side.steps) : 0;

  side.tables.push_back(NamedTable{"kernel", "kernels", diff_kernel_costs(report)});
  // The op attribution: each op's and annotation's calls, the GPU activities they launched and their GPU
  // time (an op counts the activities launched directly inside it, an annotation everything under it);
  // and each op's CPU time (inclusive: aten::linear's holds its aten::addmm's).
  using DiffCostMap = std::map<std::string, NamedCost, std::less<>>;
  DiffCostMap ops, annotations, op_cpu;
  auto add_rows = [](DiffCostMap& into, const std::vector<AttributionRow>& rows, bool cpu) {
    for (const auto& row : rows) {
      NamedCost& c = into[row.name];
      c.name = row.name;
      c.count += row.instances;
      c.total_ns += cpu ? row.cpu_ns : row.gpu_ns;
      if (!cpu) c.launched_kernels += row.activities;
    }
  };
  for (const auto& r : report.ranks) {
    add_rows(ops, r.ops.ops, false);
    add_rows(annotations, r.ops.annotations, false);
    add_rows(op_cpu, r.ops.ops, true);
  }
  auto table = [&](std::string kind, std::string title, DiffCostMap& rows) {
    NamedTable t{std::move(kind), std::move(title), {}};
    for (auto& [name, cost] : rows) t.rows.push_back(std::move(cost));
    side.tables.push_back(std::move(t));
  };
  table("op", "ops (GPU time of the work each launched)", ops);
  table("annotation", "annotations (GPU time of the work launched inside them)", annotations);
  table("op_cpu", "ops by CPU time (inclusive of the ops they call)", op_cpu);
  NamedTable transfer_table{"transfer", "transfers (memcpy by direction, memset)", {}};
  for (auto& [name, cost] : transfers) transfer_table.rows.push_back(std::move(cost));
  side.tables.push_back(std::move(transfer_table));
  return side;
}

bool TraceDiff::no_changes() const {
  for (const auto& m : metrics) {
    if (m.delta() != 0) return false;
  }
  for (const auto& t : tables) {
    if (t.added + t.removed + t.changed > 0) return false;
  }
  return true;
}

TraceDiff diff_traces(DiffSide before, DiffSide after, const TraceDiffOptions& options) {
  TraceDiff diff;
  diff.before = std::move(before);
  diff.after = std::move(after);
  const auto possible = [&](DiffUnit u) { return diff_unit_possible(diff.before, u) && diff_unit_possible(diff.after, u); };
  DiffUnit unit = DiffUnit::kTrace;
  if (options.unit && possible(*options.unit)) {
    unit = *options.unit;
  } else {
    for (const DiffUnit u : {DiffUnit::kStep, DiffUnit::kSecond}) {
      if (possible(u)) {
        unit = u;
        break;
      }
    }
    if (options.unit) {
      diff.warnings.push_back(
          fmt::format("per {} was asked for, but {} cannot be divided by it: per {} instead", diff_unit_key(*options.unit),
                      !diff_unit_possible(diff.before, *options.unit) ? "BEFORE" : "AFTER", diff_unit_key(unit)));
    }
  }
  diff.unit = unit;
  diff.before_divisor = diff_divisor_of(diff.before, unit);
  diff.after_divisor = diff_divisor_of(diff.after, unit);
  diff.unit_description = diff_unit_description_of(diff);
  const DiffDivisors div{unit, diff.before_divisor, diff.after_divisor};

  diff_add_metrics(diff);

  // Tables of one kind are matched by kind; a kind on one side only still gets its table (all added or
  // all removed), so an op table that appears with a newer profiler setting says so.
  std::vector<std::string> kinds;
  for (const auto* side : {&diff.before, &diff.after}) {
    for (const auto& t : side->tables) {
      if (std::find(kinds.begin(), kinds.end(), t.kind) == kinds.end()) kinds.push_back(t.kind);
    }
  }
  auto find = [](const DiffSide& side, const std::string& kind) -> const NamedTable* {
    for (const auto& t : side.tables) {
      if (t.kind == kind) return &t;
    }
    return nullptr;
  };
  std::optional<std::size_t> kernel_index;
  for (const auto& kind : kinds) {
    diff.tables.push_back(diff_table(find(diff.before, kind), find(diff.after, kind), div));
    if (kind == "kernel") kernel_index = diff.tables.size() - 1;
  }
  if (kernel_index) {
    if (auto families = diff_family_table(diff.tables[*kernel_index], div)) {
      diff.tables.insert(diff.tables.begin() + static_cast<std::ptrdiff_t>(*kernel_index) + 1, std::move(*families));
      // The insert moved the tables after it; the kernel table itself stays where it was.
    }
  }
  diff_add_warnings(diff, kernel_index ? &diff.tables[*kernel_index] : nullptr);

  for (std::size_t t = 0; t < diff.tables.size(); ++t) {
    // Annotations hold the kernels and ops below them (ProfilerStep#* holds everything): listed among the
    // biggest changes they would push out the rows that say what changed. They stay in their table.
    // CPU time of ops is inclusive (an op and the ops it calls move together): also in its table only.
    if (diff.tables[t].kind == "annotation" || diff.tables[t].kind == "op_cpu") continue;
    for (std::size_t r = 0; r < diff.tables[t].rows.size(); ++r) {
      // A change of count alone that moved no time (an op that launches nothing) is in its table only.
      const NamedDelta& d = diff.tables[t].rows[r];
      if (d.change != ChangeKind::kUnchanged && d.delta_ns() != 0) diff.biggest.emplace_back(t, r);
    }
  }
  std::stable_sort(diff.biggest.begin(), diff.biggest.end(), [&](const auto& x, const auto& y) {
    return std::abs(diff.tables[x.first].rows[x.second].delta_ns()) > std::abs(diff.tables[y.first].rows[y.second].delta_ns());
  });
  if (diff.biggest.size() > options.top) diff.biggest.resize(options.top);
  return diff;
}

}  // namespace gpuscope::trace

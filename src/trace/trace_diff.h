// TraceDiff: two runs of a program (each a trace file or a directory of per-rank files) side by side: step
// time, GPU busy/idle and its breakdown, and every kernel (and, where the reports carry them, every op
// or annotation) added, removed or changed, sorted by what it costs per step, so a regression between
// two runs is one command. Works on TraceReports only: the reading and analysis are the trace module's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace_analyzer.h"

namespace gpuscope::trace {

// What a name (a kernel, an op, an annotation, a transfer direction) cost over a whole side, summed over
// its ranks and devices.
struct NamedCost {
  std::string name;
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  // For ops: the kernels their calls launched (0: not known); drives "now launches 3 kernels instead of 1".
  std::uint64_t launched_kernels = 0;
};

// One table of named costs. `kind` is the JSON key and the word in explanations ("kernel", "op", ...).
struct NamedTable {
  std::string kind;
  std::string title;  // "kernels", "CPU ops", ...
  std::vector<NamedCost> rows;
};

// One side of the diff, summed over its ranks (and each rank's devices).
struct DiffSide {
  std::string path;
  std::size_t ranks = 0;
  std::optional<std::int64_t> world_size;
  std::vector<std::string> device_names;  // distinct, sorted; empty names left out
  std::size_t devices = 0;                // over all ranks
  std::uint64_t steps = 0;                // ProfilerStep annotations over all ranks
  bool every_rank_has_steps = false;
  std::int64_t step_median_ns = 0;  // median of the ranks' median steps
  std::int64_t step_mean_ns = 0;    // over all steps of all ranks
  std::int64_t span_ns = 0;         // sum of the ranks' trace spans
  std::int64_t window_ns = 0;       // sum of the devices' active windows
  std::int64_t busy_ns = 0;
  IdleBreakdown idle;
  std::int64_t computation_ns = 0;
  std::int64_t communication_ns = 0;
  std::int64_t memory_ns = 0;
  std::uint64_t kernel_count = 0;
  std::int64_t kernel_ns = 0;
  std::uint64_t runtime_calls = 0;
  std::vector<NamedTable> tables;  // kernels, transfers, ops, annotations (empty where the traces have none)
};

// Needs the report made with TraceAnalysisOptions::kernel_summary (every kernel, not just the top N).
DiffSide diff_side(const TraceReport& report, const std::string& path);

// What the per-side totals are divided by before they are compared.
enum class DiffUnit {
  kStep,    // per ProfilerStep (per step of a rank when there are several ranks)
  kSecond,  // per second of trace span
  kTrace,   // per trace (per rank's trace when there are several ranks)
};
std::string diff_unit_key(DiffUnit unit);     // "step", "second", "trace"
std::string diff_unit_suffix(DiffUnit unit);  // "/step", "/s", "/trace": after a time or count

enum class ChangeKind { kAdded, kRemoved, kChanged, kUnchanged };
std::string change_kind_key(ChangeKind kind);  // "added", "removed", "changed", "unchanged"

// One name's figures on both sides, per unit.
struct NamedDelta {
  std::string name;
  ChangeKind change = ChangeKind::kUnchanged;
  double before_count = 0, after_count = 0;                     // per unit
  double before_ns = 0, after_ns = 0;                           // per unit
  std::uint64_t before_total_count = 0, after_total_count = 0;  // over the whole side
  std::int64_t before_total_ns = 0, after_total_ns = 0;
  // Ops: kernels launched per call, 0 when not known.
  double before_kernels_per_call = 0, after_kernels_per_call = 0;
  // Family rows: the exact names grouped, each with the side(s) it is on ("<", ">" or "=").
  std::vector<std::pair<std::string, std::string>> members;
  std::string explanation;  // one line: "+38.0 ms/step: op `aten::layer_norm` now launches 3 kernels instead of 1"
  double delta_ns() const { return after_ns - before_ns; }
};

struct TableDiff {
  std::string kind;  // "kernel", "kernel_family", "transfer", "op", ...
  std::string title;
  std::string note;              // what the table is, when it needs saying (the family grouping rule)
  std::vector<NamedDelta> rows;  // by |delta| per unit, largest first; unchanged rows last
  std::size_t added = 0, removed = 0, changed = 0, unchanged = 0;
};

// A whole-side figure on both sides, already per unit where it is a total.
struct MetricDelta {
  std::string key;    // JSON key without unit: "step_median", "busy", ...
  std::string label;  // text label
  enum class Unit { kNanoseconds, kRatio, kCount } unit = Unit::kNanoseconds;
  bool per_unit = false;  // divided by the unit (else a figure of its own: step time, busy share)
  double before = 0, after = 0;
  double delta() const { return after - before; }
};

struct TraceDiff {
  DiffSide before, after;
  DiffUnit unit = DiffUnit::kStep;
  double before_divisor = 1, after_divisor = 1;  // what each side's totals were divided by
  std::string unit_description;                  // one line: "per step (10 steps before, 12 after)"
  std::vector<std::string> warnings;             // unrelated traces and the like, one line each
  std::vector<MetricDelta> metrics;
  std::vector<TableDiff> tables;
  // The biggest changes over the tables but annotations (which hold the rows below them), by |impact|:
  // (table, row) indices into `tables`.
  std::vector<std::pair<std::size_t, std::size_t>> biggest;
  const NamedDelta& change(std::size_t i) const { return tables[biggest[i].first].rows[biggest[i].second]; }
  bool no_changes() const;
};

struct TraceDiffOptions {
  std::optional<DiffUnit> unit;  // nullopt: per step when both sides have steps, else per second, else per trace
  std::size_t top = 10;          // how many changes `biggest` keeps
};

// The names of kernels that differ only in template arguments, parameter lists and numbers (tile sizes,
// launch bounds, vector widths) share a family: "void f<4, float>(int)" and "void f<8, float>(int)" are
// "f<…>", "sm80_xmma_gemm_128x64" and "sm80_xmma_gemm_64x64" are "sm#_xmma_gemm_#x#".
std::string kernel_family(const std::string& name);

TraceDiff diff_traces(DiffSide before, DiffSide after, const TraceDiffOptions& options);

}  // namespace gpuscope::trace

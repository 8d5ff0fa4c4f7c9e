// TopModel: what `gpuscope top` knows between two draws: the latest reading, a ring of recent values
// per GPU and metric (the sparklines), and the viewer's choices (selected or focused GPU, process sort
// and user filter, pause). Pure: no terminal, no thread, no clock; the UI thread owns it.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "top/top_frame.h"

namespace gpuscope::top {

// The last `capacity` values of one metric, oldest first; a missing value (unsupported, GPU lost) is a
// gap, so a sparkline shows when the GPU was away instead of bridging it.
class HistoryRing {
 public:
  explicit HistoryRing(std::size_t capacity);
  void push(std::optional<double> value);
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return values_.size(); }
  // i = 0 is the oldest kept value.
  const std::optional<double>& at(std::size_t i) const;
  // The newest `n` values (fewer when fewer were pushed), oldest first.
  std::vector<std::optional<double>> newest(std::size_t n) const;

 private:
  std::vector<std::optional<double>> values_;
  std::size_t next_ = 0;  // where the next value goes
  std::size_t size_ = 0;
};

// One cell per value, ▁ to █ by value / full_scale (clamped), ' ' for 0 and for gaps. The newest
// `width` values, right-aligned (padded with spaces on the left while the history is short).
std::u32string sparkline(std::span<const std::optional<double>> values, std::size_t width, double full_scale);

enum class SortKey { kMemory, kSmPercent, kPid };
std::string_view sort_key_name(SortKey key);  // "memory", "SM%", "pid"

class TopModel {
 public:
  // How many readings each sparkline keeps (at 1 s, two minutes: wider than any terminal's sparkline).
  static constexpr std::size_t kDefaultHistory = 240;
  explicit TopModel(std::size_t history_capacity = kDefaultHistory);

  // Takes a reading: the latest values and one more point of every history. Ignored (false) while paused,
  // so what is on screen stays as it was.
  bool apply(const Frame& frame);
  const Frame* latest() const { return latest_ ? &*latest_ : nullptr; }
  std::size_t readings() const { return readings_; }
  // GPU `index`'s history of `metric`; an empty ring for a GPU never seen.
  const HistoryRing& history(unsigned index, Metric metric) const;

  // The GPU the arrow keys move over (an index into latest()->gpus); 0 before the first reading.
  std::size_t selected() const { return selected_; }
  const GpuFrame* selected_gpu() const;
  void select_next();
  void select_previous();
  // Selects the GPU with this NVML index; false when the reading has none.
  bool select_index(unsigned index);
  // Focus: only the selected GPU is drawn, in detail, and the process table shows only its processes.
  bool focused() const { return focused_; }
  void toggle_focus() { focused_ = !focused_; }

  SortKey sort() const { return sort_; }
  void set_sort(SortKey key) { sort_ = key; }
  void cycle_sort();

  const std::string& user_filter() const { return user_filter_; }
  void set_user_filter(std::string user) { user_filter_ = std::move(user); }

  bool paused() const { return paused_; }
  void toggle_pause() { paused_ = !paused_; }

  // The process table: every GPU's processes (the focused GPU's only, when focused), those of the user
  // filter only when one is set, sorted by the sort key, largest first (pid: smallest first); ties by
  // GPU then pid, so the order never flickers between draws. Focused on a GPU in MIG mode, grouped by
  // GPU instance first (in the order its instance rows are drawn).
  std::vector<ProcessRow> process_rows() const;

 private:
  using GpuHistories = std::array<HistoryRing, kMetricCount>;
  GpuHistories make_histories() const;

  std::size_t capacity_;
  std::optional<Frame> latest_;
  std::size_t readings_ = 0;
  std::map<unsigned, GpuHistories> histories_;
  GpuHistories empty_;
  std::size_t selected_ = 0;
  bool focused_ = false;
  SortKey sort_ = SortKey::kMemory;
  std::string user_filter_;
  bool paused_ = false;
};

}  // namespace gpuscope::top

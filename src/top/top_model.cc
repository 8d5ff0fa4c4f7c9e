#include "top/top_model.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace gpuscope::top {
namespace {

// ▁ (1/8) to █ (8/8).
constexpr std::u32string_view kBlocks = U"▁▂▃▄▅▆▇█";

}  // namespace

HistoryRing::HistoryRing(std::size_t capacity) : values_(std::max<std::size_t>(capacity, 1)) {}

void HistoryRing::push(std::optional<double> value) {
  values_[next_] = value;
  next_ = (next_ + 1) % values_.size();
  size_ = std::min(size_ + 1, values_.size());
}

const std::optional<double>& HistoryRing::at(std::size_t i) const {
  const std::size_t oldest = (next_ + values_.size() - size_) % values_.size();
  return values_[(oldest + i) % values_.size()];
}

std::vector<std::optional<double>> HistoryRing::newest(std::size_t n) const {
  const std::size_t count = std::min(n, size_);
  std::vector<std::optional<double>> out;
  out.reserve(count);
  for (std::size_t i = size_ - count; i < size_; ++i) out.push_back(at(i));
  return out;
}

std::u32string sparkline(std::span<const std::optional<double>> values, std::size_t width, double full_scale) {
  std::u32string out(width, U' ');
  if (width == 0) return out;
  const std::size_t count = std::min(width, values.size());
  const auto first = values.end() - static_cast<std::ptrdiff_t>(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto& v = first[static_cast<std::ptrdiff_t>(i)];
    if (!v || !std::isfinite(*v) || *v <= 0 || full_scale <= 0) continue;
    // Any value above zero shows at least ▁, so a light load is told from none.
    const double share = std::min(*v / full_scale, 1.0);
    const auto level = std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(share * 8)), 1, 8);
    out[width - count + i] = kBlocks[level - 1];
  }
  return out;
}

std::string_view sort_key_name(SortKey key) {
  switch (key) {
    case SortKey::kMemory: return "memory";
    case SortKey::kSmPercent: return "SM%";
    case SortKey::kPid: return "pid";
  }
  return "memory";
}

TopModel::TopModel(std::size_t history_capacity) : capacity_(history_capacity), empty_(make_histories()) {}

TopModel::GpuHistories TopModel::make_histories() const {
  return [this]<std::size_t... I>(std::index_sequence<I...>) {
    return GpuHistories{((void)I, HistoryRing(capacity_))...};
  }(std::make_index_sequence<kMetricCount>());
}

bool TopModel::apply(const Frame& frame) {
  if (paused_) return false;
  for (const auto& g : frame.gpus) {
    auto it = histories_.find(g.index);
    if (it == histories_.end()) it = histories_.emplace(g.index, make_histories()).first;
    for (std::size_t m = 0; m < kMetricCount; ++m) it->second[m].push(g.up ? g.values[m] : std::nullopt);
  }
  latest_ = frame;
  ++readings_;
  if (!latest_->gpus.empty()) selected_ = std::min(selected_, latest_->gpus.size() - 1);
  return true;
}

const HistoryRing& TopModel::history(unsigned index, Metric metric) const {
  const auto it = histories_.find(index);
  return (it == histories_.end() ? empty_ : it->second)[static_cast<std::size_t>(metric)];
}

const GpuFrame* TopModel::selected_gpu() const {
  if (!latest_ || selected_ >= latest_->gpus.size()) return nullptr;
  return &latest_->gpus[selected_];
}

void TopModel::select_next() {
  if (latest_ && selected_ + 1 < latest_->gpus.size()) ++selected_;
}

void TopModel::select_previous() {
  if (selected_ > 0) --selected_;
}

bool TopModel::select_index(unsigned index) {
  if (!latest_) return false;
  for (std::size_t i = 0; i < latest_->gpus.size(); ++i) {
    if (latest_->gpus[i].index == index) {
      selected_ = i;
      return true;
    }
  }
  return false;
}

void TopModel::cycle_sort() {
  switch (sort_) {
    case SortKey::kMemory: sort_ = SortKey::kSmPercent; break;
    case SortKey::kSmPercent: sort_ = SortKey::kPid; break;
    case SortKey::kPid: sort_ = SortKey::kMemory; break;
  }
}

std::vector<ProcessRow> TopModel::process_rows() const {
  std::vector<ProcessRow> rows;
  if (!latest_) return rows;
  const GpuFrame* only = focused_ ? selected_gpu() : nullptr;
  for (const auto& g : latest_->gpus) {
    if (only != nullptr && g.index != only->index) continue;
    for (const auto& p : g.processes) {
      if (!user_filter_.empty() && p.user != user_filter_) continue;
      rows.push_back(p);
    }
  }
  // Unknown values sort below every known one (-1), as nvitop puts N/A last.
  const auto key = [this](const ProcessRow& p) -> double {
    switch (sort_) {
      case SortKey::kMemory: return p.memory_bytes ? static_cast<double>(*p.memory_bytes) : -1;
      case SortKey::kSmPercent: return p.sm_percent.value_or(-1);
      case SortKey::kPid: return -static_cast<double>(p.pid);
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const ProcessRow& a, const ProcessRow& b) {
    const double ka = key(a), kb = key(b);
    if (ka != kb) return ka > kb;
    return std::tie(a.gpu, a.pid) < std::tie(b.gpu, b.pid);
  });
  // Focused on a GPU in MIG mode: its processes grouped under their GPU instance, in the order the
  // instance rows are drawn (processes of no known instance last), sorted by the key within a group.
  if (only != nullptr && !only->mig_instances.empty()) {
    const auto rank = [only](const ProcessRow& p) {
      const auto& instances = only->mig_instances;
      for (std::size_t i = 0; i < instances.size(); ++i) {
        if (p.gpu_instance_id == instances[i].gpu_instance_id) return i;
      }
      return instances.size();
    };
    std::stable_sort(rows.begin(), rows.end(), [&](const ProcessRow& a, const ProcessRow& b) { return rank(a) < rank(b); });
  }
  return rows;
}

}  // namespace gpuscope::top

#include "trace/rank_comparison.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace gpuscope::trace {
namespace {

// A message names this many files of a group, then "and N more": it stays one line for 1024 ranks.
constexpr std::size_t kFilesNamed = 3;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double busy_ratio(const RankReport& r) {
  std::int64_t busy = 0, window = 0;
  for (const auto& d : r.devices) {
    busy += d.busy_ns;
    window += d.window_ns();
  }
  return window > 0 ? static_cast<double>(busy) / static_cast<double>(window) : 0;
}

std::string file_name(const RankReport& r) { return std::filesystem::path(r.file).filename().string(); }

std::string file_list(const std::vector<const RankReport*>& files) {
  std::string out;
  for (std::size_t i = 0; i < files.size() && i < kFilesNamed; ++i) out += (i > 0 ? ", " : "") + file_name(*files[i]);
  if (files.size() > kFilesNamed) out += fmt::format(" and {} more", files.size() - kFilesNamed);
  return out;
}

// "rank 3", or the file when neither distributedInfo nor the name says the rank.
std::string rank_label(const RankReport& r) {
  const std::int64_t rank = display_rank(r);
  return rank >= 0 ? fmt::format("rank {}", rank) : file_name(r);
}

// "KEY: a, b; KEY2: c": the files grouped by key(file), groups in the order of their first file; files
// whose key is empty are left out.
template <typename Key>
std::string grouped_files(const std::vector<RankReport>& ranks, Key key) {
  std::vector<std::pair<std::string, std::vector<const RankReport*>>> groups;
  for (const auto& r : ranks) {
    std::string k = key(r);
    if (k.empty()) continue;
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == k; });
    if (group == groups.end()) group = groups.insert(groups.end(), {std::move(k), {}});
    group->second.push_back(&r);
  }
  std::string out;
  for (const auto& [k, files] : groups) out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", k, file_list(files));
  return out;
}

std::string ranks_word(std::size_t n) { return n == 1 ? "1 rank" : fmt::format("{} ranks", n); }

// The median of `value` over every rank but `skip`.
template <typename Value>
double others_median(const std::vector<const RankReport*>& ranks, const RankReport* skip, Value value) {
  std::vector<double> v;
  for (const auto* r : ranks) {
    if (r != skip) v.push_back(value(*r));
  }
  return median(std::move(v));
}

RankComparison compare_steps(const std::vector<const RankReport*>& with_steps, std::size_t all_ranks) {
  RankComparison c;
  const std::string without =
      with_steps.size() < all_ranks ? fmt::format("; {} without profiler steps left out", ranks_word(all_ranks - with_steps.size())) : "";
  const auto* fewest = *std::min_element(with_steps.begin(), with_steps.end(), [](const RankReport* a, const RankReport* b) {
    return a->steps.count < b->steps.count;
  });
  if (fewest->steps.count < kStragglerMinSteps) {
    c.no_straggler = NoStraggler{
        NoStragglerReason::kTooFewSteps,
        fmt::format("too few profiler steps to judge: {} has {} (a straggler is judged on each rank's median step, "
                    "which needs {} steps; record more with torch.profiler.schedule(active=N)){}",
                    rank_label(*fewest), fewest->steps.count, kStragglerMinSteps, without)};
    return c;
  }
  auto step_seconds = [](const RankReport& r) { return static_cast<double>(r.steps.median_ns) / 1e9; };
  const auto* slowest = *std::max_element(with_steps.begin(), with_steps.end(), [](const RankReport* a, const RankReport* b) {
    return a->steps.median_ns < b->steps.median_ns;
  });
  const double value = step_seconds(*slowest);
  const double others = others_median(with_steps, slowest, step_seconds);
  const double excess = others > 0 ? value / others - 1 : 0;
  const std::string others_text = fmt::format("{:.2f} ms, the median of the other {}", others * 1e3, ranks_word(with_steps.size() - 1));
  if (excess < kStragglerStepExcess) {
    c.no_straggler = NoStraggler{
        NoStragglerReason::kBelowThreshold,
        fmt::format("the slowest steps, {}'s, have a median of {:.2f} ms against {} (+{:.1f}%, under the +{:.0f}% "
                    "that names a straggler){}",
                    rank_label(*slowest), value * 1e3, others_text, 100 * excess, 100 * kStragglerStepExcess, without)};
    return c;
  }
  c.straggler = Straggler{
      display_rank(*slowest), slowest->file, StragglerBasis::kSteps, value, others, excess, kStragglerStepExcess,
      fmt::format("{} has the slowest steps: a median step of {:.2f} ms against {} (+{:.1f}%, named from +{:.0f}%){}",
                  rank_label(*slowest), value * 1e3, others_text, 100 * excess, 100 * kStragglerStepExcess, without)};
  return c;
}

RankComparison compare_busy(const std::vector<RankReport>& ranks) {
  RankComparison c;
  std::vector<const RankReport*> all;
  for (const auto& r : ranks) all.push_back(&r);
  const auto* least = *std::min_element(all.begin(), all.end(), [](const RankReport* a, const RankReport* b) {
    return busy_ratio(*a) < busy_ratio(*b);
  });
  const double value = busy_ratio(*least);
  const double others = others_median(all, least, busy_ratio);
  const double gap = others - value;
  const std::string why = "no ProfilerStep annotations to compare step times";
  if (gap < kStragglerBusyGap) {
    c.no_straggler = NoStraggler{
        NoStragglerReason::kBelowThreshold,
        fmt::format("the least busy GPU, {}'s, is {:.1f}% busy against {:.1f}%, the median of the other {} ({:.1f} points "
                    "less, under the {:.0f} that name a straggler; {})",
                    rank_label(*least), 100 * value, 100 * others, ranks_word(all.size() - 1), 100 * gap, 100 * kStragglerBusyGap,
                    why)};
    return c;
  }
  c.straggler = Straggler{
      display_rank(*least), least->file, StragglerBasis::kBusy, value, others, gap, kStragglerBusyGap,
      fmt::format("{} has the least busy GPU: {:.1f}% busy against {:.1f}%, the median of the other {} ({:.1f} points "
                  "less, named from {:.0f}; {})",
                  rank_label(*least), 100 * value, 100 * others, ranks_word(all.size() - 1), 100 * gap, 100 * kStragglerBusyGap,
                  why)};
  return c;
}

}  // namespace

std::int64_t display_rank(const RankReport& report) {
  if (report.rank) return *report.rank;
  const std::string& f = report.file;
  for (std::size_t at = f.rfind("rank"); at != std::string::npos; at = at == 0 ? std::string::npos : f.rfind("rank", at - 1)) {
    std::size_t i = at + 4;
    if (i < f.size() && (f[i] == '-' || f[i] == '_')) ++i;
    std::int64_t v = 0;
    std::size_t digits = 0;
    while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i])) != 0 && digits < 9) {
      v = v * 10 + (f[i] - '0');
      ++i;
      ++digits;
    }
    if (digits > 0) return v;
  }
  return -1;
}

std::optional<std::string> why_not_one_run(const std::vector<RankReport>& ranks) {
  // Different runs first: two runs in one directory usually also share rank numbers, and "rank 0 is in
  // two files" would hide the real mistake.
  std::set<std::int64_t> sizes;
  std::set<std::string> backends;
  for (const auto& r : ranks) {
    if (r.world_size) sizes.insert(*r.world_size);
    if (r.backend) backends.insert(*r.backend);
  }
  const bool by_size = sizes.size() > 1;
  const bool by_backend = backends.size() > 1;
  if (by_size || by_backend) {
    const std::string runs = grouped_files(ranks, [&](const RankReport& r) {
      std::string key;
      if (by_size) key = r.world_size ? fmt::format("world size {}", *r.world_size) : "no world size";
      if (by_backend) key += (key.empty() ? "" : ", ") + (r.backend ? fmt::format("backend {}", *r.backend) : "no backend");
      return key;
    });
    return fmt::format("the traces are not one run ({}); give one file, or one directory per run", runs);
  }
  // One run profiled twice (torch.profiler.schedule(repeat=2) writes a file per rank per window), or two
  // runs of one shape: ranks of one window count the same ProfilerStep numbers, so ranges that share no
  // step are different windows, whose step times are not comparable. Overlapping ranges pass: a rank cut
  // short (--lenient on a truncated file) is still the same window.
  std::optional<std::int64_t> latest_first, earliest_last;
  for (const auto& r : ranks) {
    if (!r.steps.first_number) continue;
    latest_first = std::max(latest_first.value_or(*r.steps.first_number), *r.steps.first_number);
    earliest_last = std::min(earliest_last.value_or(*r.steps.last_number), *r.steps.last_number);
  }
  if (latest_first && *latest_first > *earliest_last) {
    const std::string windows = grouped_files(ranks, [](const RankReport& r) {
      if (!r.steps.first_number) return std::string();
      return *r.steps.first_number == *r.steps.last_number ? fmt::format("step {}", *r.steps.first_number)
                                                           : fmt::format("steps {}-{}", *r.steps.first_number, *r.steps.last_number);
    });
    return fmt::format("the traces are not one profiling window, no ProfilerStep is in all of them ({}); give one file, or one "
                       "directory per window",
                       windows);
  }
  std::map<std::int64_t, std::vector<const RankReport*>> by_rank;
  for (const auto& r : ranks) {
    if (const std::int64_t rank = display_rank(r); rank >= 0) by_rank[rank].push_back(&r);
  }
  std::vector<std::int64_t> repeated;
  for (const auto& [rank, files] : by_rank) {
    if (files.size() > 1) repeated.push_back(rank);
  }
  if (repeated.empty()) return std::nullopt;
  const auto& files = by_rank[repeated.front()];
  return fmt::format("rank {} is in {} files ({}){}; a directory holds one trace per rank of one run: give one file, "
                     "or one directory per run",
                     repeated.front(), files.size(), file_list(files),
                     repeated.size() > 1 ? fmt::format(", and {} more ranks are in several files", repeated.size() - 1) : "");
}

RankComparison compare_ranks(const std::vector<RankReport>& ranks) {
  if (ranks.size() < 2) return {};
  std::vector<const RankReport*> with_steps;
  for (const auto& r : ranks) {
    if (r.steps.count > 0) with_steps.push_back(&r);
  }
  RankComparison c = with_steps.size() >= 2 ? compare_steps(with_steps, ranks.size()) : compare_busy(ranks);
  for (const auto& r : ranks) {
    if (r.world_size) c.world_size = r.world_size;
  }
  return c;
}

std::string straggler_basis_key(StragglerBasis basis) { return basis == StragglerBasis::kSteps ? "steps" : "busy"; }

std::string no_straggler_key(NoStragglerReason reason) {
  return reason == NoStragglerReason::kTooFewSteps ? "too_few_steps" : "below_threshold";
}

}  // namespace gpuscope::trace

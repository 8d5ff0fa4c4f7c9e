#include "trace/op_attribution.h"

#include <algorithm>
#include <unordered_map>

#include "trace/mostly_ordered_sort.h"

namespace gpuscope::trace {
namespace {

// Indices grouped by thread, each group in its first-seen order and in file order inside it: a counting
// sort on the few distinct threads, so that each group is nearly in time order already (Kineto writes
// a thread's events in order) and sorts in linear time.
template <typename TidOf>
std::vector<std::uint32_t> group_by_thread(std::size_t n, TidOf tid_of, std::vector<std::int32_t>& tids,
                                           std::vector<std::size_t>& bounds) {
  std::vector<std::uint32_t> slot(n);
  std::unordered_map<std::int32_t, std::uint32_t> index;
  std::vector<std::size_t> counts;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t tid = tid_of(i);
    auto [it, added] = index.try_emplace(tid, static_cast<std::uint32_t>(tids.size()));
    if (added) {
      tids.push_back(tid);
      counts.push_back(0);
    }
    slot[i] = it->second;
    ++counts[it->second];
  }
  bounds.assign(tids.size() + 1, 0);
  for (std::size_t t = 0; t < tids.size(); ++t) bounds[t + 1] = bounds[t] + counts[t];
  std::vector<std::size_t> at(bounds.begin(), bounds.end() - 1);
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[at[slot[i]]++] = static_cast<std::uint32_t>(i);
  return order;
}

bool nests_calls(CpuEventKind kind) { return kind == CpuEventKind::kCpuOp || kind == CpuEventKind::kUserAnnotation; }

struct NestingFrame {
  std::uint32_t event;
  std::int32_t op;          // innermost op at this depth (this event or one around it)
  std::int32_t annotation;  // innermost annotation at this depth
};

struct AttributionAccumulator {
  AttributionRow row;
  bool used = false;
};

void add_activity(AttributionAccumulator& acc, const GpuActivity& a, std::int64_t delay) {
  acc.used = true;
  ++acc.row.activities;
  acc.row.gpu_ns += a.duration_ns;
  acc.row.launch_delay_total_ns += delay;
  acc.row.launch_delay_max_ns = acc.row.activities == 1 ? delay : std::max(acc.row.launch_delay_max_ns, delay);
}

std::vector<AttributionRow> finish_rows(std::vector<AttributionAccumulator>& accs, std::int64_t activity_ns) {
  std::vector<AttributionRow> rows;
  for (auto& acc : accs) {
    if (!acc.used) continue;
    acc.row.gpu_share = activity_ns > 0 ? static_cast<double>(acc.row.gpu_ns) / static_cast<double>(activity_ns) : 0.0;
    rows.push_back(std::move(acc.row));
  }
  std::sort(rows.begin(), rows.end(), [](const AttributionRow& a, const AttributionRow& b) {
    if (a.gpu_ns != b.gpu_ns) return a.gpu_ns > b.gpu_ns;
    if (a.cpu_ns != b.cpu_ns) return a.cpu_ns > b.cpu_ns;
    return a.name < b.name;
  });
  return rows;
}

}  // namespace

std::string annotation_group(std::string_view name) {
  const std::size_t hash = name.rfind('#');
  if (hash == std::string_view::npos || hash + 1 == name.size()) return std::string(name);
  for (std::size_t i = hash + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::string(name);
  }
  return std::string(name.substr(0, hash + 1)) + "*";
}

CpuNesting nest_cpu_events(const RankTimeline& timeline) {
  const auto& events = timeline.cpu_events;
  const auto& calls = timeline.runtime_calls;
  CpuNesting nesting;
  nesting.of_call.assign(calls.size(), CpuCallContext{});
  nesting.enclosing_annotation.assign(events.size(), -1);

  // Both sides grouped by thread, each group sorted by time.
  std::vector<std::int32_t> event_tids, call_tids;
  std::vector<std::size_t> event_bounds, call_bounds;
  // The GPU's copies of annotations carry a stream, not a thread: left out.
  std::vector<std::uint32_t> cpu_side;
  cpu_side.reserve(events.size());
  for (std::uint32_t i = 0; i < events.size(); ++i) {
    if (nests_calls(events[i].kind)) cpu_side.push_back(i);
  }
  auto event_order = group_by_thread(cpu_side.size(), [&](std::size_t k) { return events[cpu_side[k]].tid; }, event_tids, event_bounds);
  for (std::uint32_t& k : event_order) k = cpu_side[k];
  auto call_order = group_by_thread(calls.size(), [&](std::size_t i) { return calls[i].tid; }, call_tids, call_bounds);
  std::unordered_map<std::int32_t, std::size_t> call_group;
  for (std::size_t g = 0; g < call_tids.size(); ++g) {
    call_group.emplace(call_tids[g], g);
    sort_mostly_ordered(call_order.begin() + static_cast<std::ptrdiff_t>(call_bounds[g]),
                        call_order.begin() + static_cast<std::ptrdiff_t>(call_bounds[g + 1]),
                        [&](std::uint32_t a, std::uint32_t b) { return calls[a].start_ns < calls[b].start_ns; });
  }
  std::vector<bool> call_group_seen(call_tids.size());
  std::vector<NestingFrame> stack;
  for (std::size_t g = 0; g < event_tids.size(); ++g) {
    auto e_begin = event_order.begin() + static_cast<std::ptrdiff_t>(event_bounds[g]);
    auto e_end = event_order.begin() + static_cast<std::ptrdiff_t>(event_bounds[g + 1]);
    // An enclosing event first: by start, the longer first, then in file order.
    sort_mostly_ordered(e_begin, e_end, [&](std::uint32_t a, std::uint32_t b) {
      if (events[a].start_ns != events[b].start_ns) return events[a].start_ns < events[b].start_ns;
      return events[a].duration_ns > events[b].duration_ns;
    });
    CpuThread thread{event_tids[g], event_bounds[g], event_bounds[g + 1], 0, 0};
    std::vector<std::uint32_t>::iterator c_begin = call_order.end(), c_end = call_order.end();
    if (auto it = call_group.find(event_tids[g]); it != call_group.end()) {
      call_group_seen[it->second] = true;
      thread.calls_begin = call_bounds[it->second];
      thread.calls_end = call_bounds[it->second + 1];
      c_begin = call_order.begin() + static_cast<std::ptrdiff_t>(thread.calls_begin);
      c_end = call_order.begin() + static_cast<std::ptrdiff_t>(thread.calls_end);
    }
    nesting.threads.push_back(thread);
    stack.clear();
    auto e = e_begin;
    auto c = c_begin;
    while (e != e_end || c != c_end) {
      // An event that starts with a call comes first: it encloses the call.
      if (e != e_end && (c == c_end || events[*e].start_ns <= calls[*c].start_ns)) {
        const CpuEvent& ev = events[*e];
        if (!nests_calls(ev.kind)) {
          ++e;
          continue;
        }
        // A frame that ended where this one starts is a sibling, not a parent.
        while (!stack.empty() && events[stack.back().event].end_ns() <= ev.start_ns) stack.pop_back();
        NestingFrame frame{*e, -1, -1};
        if (!stack.empty()) {
          const NestingFrame& parent = stack.back();
          if (ev.end_ns() > events[parent.event].end_ns()) ++nesting.misnested;
          frame.op = parent.op;
          frame.annotation = parent.annotation;
          nesting.enclosing_annotation[*e] = parent.annotation;
        }
        if (ev.kind == CpuEventKind::kCpuOp) {
          frame.op = static_cast<std::int32_t>(*e);
        } else {
          frame.annotation = static_cast<std::int32_t>(*e);
        }
        stack.push_back(frame);
        ++e;
      } else {
        const RuntimeCall& call = calls[*c];
        // A call that starts where an op ends is still inside it (Kineto's microseconds round both).
        while (!stack.empty() && events[stack.back().event].end_ns() < call.start_ns) stack.pop_back();
        if (!stack.empty()) nesting.of_call[*c] = CpuCallContext{stack.back().op, stack.back().annotation};
        ++c;
      }
    }
  }
  // Threads that made calls but have no CPU events: no op around their calls.
  for (std::size_t g = 0; g < call_tids.size(); ++g) {
    if (!call_group_seen[g]) nesting.threads.push_back(CpuThread{call_tids[g], 0, 0, call_bounds[g], call_bounds[g + 1]});
  }
  nesting.launch_of_activity = launching_calls(timeline);
  nesting.events_by_thread = std::move(event_order);
  nesting.calls_by_thread = std::move(call_order);
  return nesting;
}

std::vector<std::int32_t> launching_calls(const RankTimeline& timeline) {
  // Both sides by correlation id (both nearly are already: ids grow with time), then one merge.
  const auto& calls = timeline.runtime_calls;
  const auto& acts = timeline.activities;
  std::vector<std::uint32_t> by_correlation;
  by_correlation.reserve(calls.size());
  for (std::uint32_t i = 0; i < calls.size(); ++i) {
    if (calls[i].correlation >= 0) by_correlation.push_back(i);
  }
  sort_mostly_ordered(by_correlation.begin(), by_correlation.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (calls[a].correlation != calls[b].correlation) return calls[a].correlation < calls[b].correlation;
    return calls[a].start_ns < calls[b].start_ns;
  });
  std::vector<std::uint32_t> activities;
  activities.reserve(acts.size());
  for (std::uint32_t i = 0; i < acts.size(); ++i) {
    if (acts[i].correlation >= 0) activities.push_back(i);
  }
  sort_mostly_ordered(activities.begin(), activities.end(),
                      [&](std::uint32_t a, std::uint32_t b) { return acts[a].correlation < acts[b].correlation; });
  std::vector<std::int32_t> out(acts.size(), -1);
  std::size_t c = 0;
  for (const std::uint32_t i : activities) {
    const std::int64_t id = acts[i].correlation;
    while (c < by_correlation.size() && calls[by_correlation[c]].correlation < id) ++c;
    if (c < by_correlation.size() && calls[by_correlation[c]].correlation == id) out[i] = static_cast<std::int32_t>(by_correlation[c]);
  }
  return out;
}

OpAttribution attribute_ops(const RankTimeline& timeline, const CpuNesting& nesting) {
  const auto& events = timeline.cpu_events;
  const auto& calls = timeline.runtime_calls;
  OpAttribution out;
  out.misnested = nesting.misnested;

  // Rows by name id for the ops; by group (ProfilerStep#*) for the annotations.
  std::vector<AttributionAccumulator> op_rows(timeline.names.size());
  std::vector<std::int32_t> group_of_name(timeline.names.size(), -1);
  std::unordered_map<std::string, std::int32_t> group_index;
  std::vector<AttributionAccumulator> annotation_rows;
  auto group_of = [&](std::uint32_t name_id) {
    std::int32_t& g = group_of_name[name_id];
    if (g < 0) {
      std::string group = annotation_group(timeline.names[name_id]);
      auto [it, added] = group_index.try_emplace(group, static_cast<std::int32_t>(annotation_rows.size()));
      if (added) {
        annotation_rows.emplace_back();
        annotation_rows.back().row.name = std::move(group);
      }
      g = it->second;
    }
    return static_cast<std::size_t>(g);
  };

  for (const CpuEvent& ev : events) {
    if (ev.kind == CpuEventKind::kCpuOp) {
      ++out.cpu_ops;
      auto& acc = op_rows[ev.name_id];
      acc.used = true;
      ++acc.row.instances;
      acc.row.cpu_ns += ev.duration_ns;
    } else if (ev.kind == CpuEventKind::kUserAnnotation) {
      auto& acc = annotation_rows[group_of(ev.name_id)];
      acc.used = true;
      ++acc.row.instances;
      acc.row.cpu_ns += ev.duration_ns;
    }
  }
  out.threads = nesting.threads.size();

  const std::vector<std::int32_t>& launch_of = nesting.launch_of_activity;
  std::vector<bool> launch_counted(calls.size());
  std::vector<std::size_t> groups_seen;
  for (std::size_t i = 0; i < timeline.activities.size(); ++i) {
    const GpuActivity& a = timeline.activities[i];
    ++out.activities;
    out.activity_ns += a.duration_ns;
    if (launch_of[i] < 0) {
      ++out.without_launch;
      out.without_launch_ns += a.duration_ns;
      continue;
    }
    const auto call_index = static_cast<std::size_t>(launch_of[i]);
    const RuntimeCall& call = calls[call_index];
    const std::int64_t delay = a.start_ns - call.start_ns;
    const bool first_of_call = !launch_counted[call_index];
    launch_counted[call_index] = true;
    const CpuCallContext context = nesting.of_call[call_index];
    if (context.op >= 0) {
      auto& acc = op_rows[events[static_cast<std::size_t>(context.op)].name_id];
      add_activity(acc, a, delay);
      acc.row.launches += first_of_call;
    } else {
      ++out.outside_ops;
      out.outside_ops_ns += a.duration_ns;
    }
    // Every annotation around the launch, each name once (a "forward" inside a "forward" counts once).
    groups_seen.clear();
    for (std::int32_t at = context.annotation; at >= 0; at = nesting.enclosing_annotation[static_cast<std::size_t>(at)]) {
      const std::size_t g = group_of(events[static_cast<std::size_t>(at)].name_id);
      if (std::find(groups_seen.begin(), groups_seen.end(), g) != groups_seen.end()) continue;
      groups_seen.push_back(g);
      add_activity(annotation_rows[g], a, delay);
      annotation_rows[g].row.launches += first_of_call;
    }
  }
  for (std::size_t id = 0; id < op_rows.size(); ++id) {
    if (op_rows[id].used) op_rows[id].row.name = timeline.names[id];
  }
  out.ops = finish_rows(op_rows, out.activity_ns);
  out.annotations = finish_rows(annotation_rows, out.activity_ns);
  return out;
}

}  // namespace gpuscope::trace

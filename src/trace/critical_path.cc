#include "trace/critical_path.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "trace/mostly_ordered_sort.h"

namespace gpuscope::trace {
namespace {

constexpr std::string_view kStepPrefixCp = "ProfilerStep#";
// Labels of CPU time that no name in the timeline names.
constexpr std::int64_t kOutsideOpsLabel = -1;
constexpr std::int64_t kAfterLastCallLabel = -2;

struct PathNode {
  std::int64_t order_ns = 0;  // when it can start: the DAG's order
  std::int64_t weight_ns = 0;
  std::int64_t label = 0;     // a name id, or one of the labels above
  std::int32_t preds[2] = {-1, -1};
  PathElementKind kind = PathElementKind::kCpu;
};

// A stretch of one thread's time with the innermost CPU event running in it: the thread's ops and
// annotations flattened, so that CPU time between two CUDA calls is named by what ran then.
struct CpuPiece {
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::int64_t label = 0;
};

// Pieces of time inside an annotation but outside any op are labelled by the annotation.
constexpr std::int64_t kAnnotationLabelBase = -10;
std::int64_t annotation_label(std::uint32_t name_id) { return kAnnotationLabelBase - static_cast<std::int64_t>(name_id); }

// Path elements summed by (kind, label), in one 64-bit key: labels are name ids or small negative
// numbers (the annotation labels reach -10 - 2^32), shifted to be positive below 2^48.
using ElementTotals = std::unordered_map<std::uint64_t, PathElement>;
constexpr std::int64_t kLabelBias = std::int64_t{1} << 40;
std::uint64_t element_key(PathElementKind kind, std::int64_t label) {
  return (static_cast<std::uint64_t>(kind) << 48) | static_cast<std::uint64_t>(label + kLabelBias);
}
std::int64_t label_of_key(std::uint64_t key) {
  return static_cast<std::int64_t>(key & ((std::uint64_t{1} << 48) - 1)) - kLabelBias;
}

PathElementKind kind_of_activity(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kComputeKernel: return PathElementKind::kKernel;
    case ActivityKind::kCommunicationKernel: return PathElementKind::kCommunication;
    case ActivityKind::kMemcpy: return PathElementKind::kMemcpy;
    case ActivityKind::kMemset: return PathElementKind::kMemset;
  }
  return PathElementKind::kKernel;
}

class CriticalPathBuilder {
 public:
  CriticalPathBuilder(const RankTimeline& timeline, const CpuNesting& nesting, std::size_t top, bool keep_spans)
      : t_(timeline), nesting_(nesting), top_(top), keep_spans_(keep_spans) {
    const auto& acts = t_.activities;
    launch_of_ = nesting_.launch_of_activity;
    by_start_.resize(acts.size());
    for (std::uint32_t i = 0; i < acts.size(); ++i) by_start_[i] = i;
    sort_mostly_ordered(by_start_.begin(), by_start_.end(),
                        [&](std::uint32_t a, std::uint32_t b) { return acts[a].start_ns < acts[b].start_ns; });
    by_end_ = by_start_;
    std::sort(by_end_.begin(), by_end_.end(), [&](std::uint32_t a, std::uint32_t b) { return acts[a].end_ns() < acts[b].end_ns(); });
    stream_prev_.assign(acts.size(), -1);
    std::map<std::pair<std::int16_t, std::int32_t>, std::int32_t> last;
    for (std::uint32_t i : by_start_) {
      auto [it, added] = last.try_emplace({acts[i].device, acts[i].stream}, static_cast<std::int32_t>(i));
      if (!added) {
        stream_prev_[i] = it->second;
        it->second = static_cast<std::int32_t>(i);
      }
      longest_activity_ns_ = std::max(longest_activity_ns_, acts[i].duration_ns);
    }
    for (const CpuThread& thread : nesting_.threads) pieces_.push_back(flatten(thread));
    activities_of_call_begin_.assign(t_.runtime_calls.size() + 1, 0);
    for (const std::int32_t c : launch_of_) {
      if (c >= 0) ++activities_of_call_begin_[static_cast<std::size_t>(c) + 1];
    }
    for (std::size_t i = 1; i < activities_of_call_begin_.size(); ++i) activities_of_call_begin_[i] += activities_of_call_begin_[i - 1];
    activities_of_call_.resize(activities_of_call_begin_.back());
    {
      std::vector<std::uint32_t> at(activities_of_call_begin_.begin(), activities_of_call_begin_.end() - 1);
      for (const std::uint32_t i : by_start_) {
        if (const std::int32_t c = launch_of_[i]; c >= 0) activities_of_call_[at[static_cast<std::size_t>(c)]++] = i;
      }
    }
    call_node_.assign(t_.runtime_calls.size(), -1);
    activity_node_.assign(acts.size(), -1);
  }

  // The step's CPU window is [start, end); its GPU work (what its calls launched) may run past `end`,
  // and the step's span runs to the end of that work.
  StepCriticalPath run(std::string step, std::int64_t start, std::int64_t end) {
    nodes_.clear();
    build_cpu_chains(start, end);
    const std::int64_t span_end = build_activities(start, end);
    StepCriticalPath out = longest_path(std::move(step), start, span_end);
    out.cpu_end_ns = end;
    for (std::uint32_t c : touched_calls_) call_node_[c] = -1;
    for (std::uint32_t a : touched_activities_) activity_node_[a] = -1;
    touched_calls_.clear();
    touched_activities_.clear();
    return out;
  }

  std::string label_name(std::int64_t label) const {
    if (label == kOutsideOpsLabel) return "(CPU outside ops and annotations)";
    if (label == kAfterLastCallLabel) return "(CPU after the last CUDA call)";
    if (label <= kAnnotationLabelBase) {
      return annotation_group(t_.names[static_cast<std::size_t>(kAnnotationLabelBase - label)]) + " (outside ops)";
    }
    return t_.names[static_cast<std::size_t>(label)];
  }

  ElementTotals& totals() { return totals_; }

 private:
  std::int32_t add(PathNode node) {
    nodes_.push_back(node);
    return static_cast<std::int32_t>(nodes_.size() - 1);
  }

  // The thread's time, cut where its innermost event changes; gaps with no event are left out.
  std::vector<CpuPiece> flatten(const CpuThread& thread) const {
    std::vector<CpuPiece> pieces;
    struct Open {
      std::int64_t end;
      std::int64_t label;
    };
    std::vector<Open> stack;
    std::int64_t cursor = std::numeric_limits<std::int64_t>::min();
    auto emit = [&](std::int64_t to, std::int64_t label) {
      if (to > cursor) {
        if (!pieces.empty() && pieces.back().end == cursor && pieces.back().label == label) {
          pieces.back().end = to;
        } else {
          pieces.push_back(CpuPiece{cursor, to, label});
        }
        cursor = to;
      }
    };
    for (std::size_t k = thread.events_begin; k < thread.events_end; ++k) {
      const CpuEvent& e = t_.cpu_events[nesting_.events_by_thread[k]];
      if (e.kind == CpuEventKind::kGpuUserAnnotation) continue;
      while (!stack.empty() && stack.back().end <= e.start_ns) {
        emit(stack.back().end, stack.back().label);
        stack.pop_back();
      }
      if (!stack.empty()) emit(e.start_ns, stack.back().label);
      cursor = std::max(cursor, e.start_ns);
      // A misnested event is cut at its parent's end, so that the pieces stay in order.
      const std::int64_t e_end = stack.empty() ? e.end_ns() : std::min(e.end_ns(), stack.back().end);
      stack.push_back(Open{e_end, e.kind == CpuEventKind::kCpuOp ? static_cast<std::int64_t>(e.name_id) : annotation_label(e.name_id)});
    }
    while (!stack.empty()) {
      emit(stack.back().end, stack.back().label);
      stack.pop_back();
    }
    return pieces;
  }

  // The activity that finished last while `call` waited, or -1.
  std::int32_t awaited_by(const RuntimeCall& call) const {
    const auto& acts = t_.activities;
    auto it = std::upper_bound(by_end_.begin(), by_end_.end(), call.end_ns(),
                               [&](std::int64_t v, std::uint32_t i) { return v < acts[i].end_ns(); });
    if (it == by_end_.begin()) return -1;
    const std::uint32_t i = *(it - 1);
    return acts[i].end_ns() >= call.start_ns ? static_cast<std::int32_t>(i) : -1;
  }

  // A call that can return only after GPU work is done: the syncs, and every copy (cudaMemcpyAsync to
  // pageable memory blocks too). Whether it waited is told by a GPU activity ending inside it.
  bool may_wait(const RuntimeCall& call) const {
    const std::string_view name = t_.names[call.name_id];
    return is_synchronizing_call(name) || name.find("Memcpy") != std::string_view::npos;
  }

  // The thread's pieces inside [from, to) as chain nodes after `prev`; returns the last node.
  std::int32_t add_pieces(const std::vector<CpuPiece>& pieces, std::size_t& at, std::int64_t from, std::int64_t to,
                          std::int32_t prev) {
    while (at < pieces.size() && pieces[at].end <= from) ++at;
    for (std::size_t k = at; k < pieces.size() && pieces[k].start < to; ++k) {
      const std::int64_t a = std::max(from, pieces[k].start), b = std::min(to, pieces[k].end);
      if (b <= a) continue;
      PathNode node;
      node.order_ns = a;
      node.weight_ns = b - a;
      node.label = pieces[k].label;
      node.preds[0] = prev;
      prev = add(node);
    }
    return prev;
  }

  void build_cpu_chains(std::int64_t start, std::int64_t end) {
    const auto& calls = t_.runtime_calls;
    for (std::size_t th = 0; th < nesting_.threads.size(); ++th) {
      const CpuThread& thread = nesting_.threads[th];
      if (thread.calls_begin == thread.calls_end) continue;  // no CUDA call links this thread to the GPU
      const std::vector<CpuPiece>& pieces = pieces_[th];
      auto first = std::lower_bound(nesting_.calls_by_thread.begin() + static_cast<std::ptrdiff_t>(thread.calls_begin),
                                    nesting_.calls_by_thread.begin() + static_cast<std::ptrdiff_t>(thread.calls_end), start,
                                    [&](std::uint32_t c, std::int64_t v) { return calls[c].start_ns < v; });
      const auto last = nesting_.calls_by_thread.begin() + static_cast<std::ptrdiff_t>(thread.calls_end);
      if (first == last || calls[*first].start_ns >= end) continue;
      std::int32_t prev = -1;
      std::int64_t boundary = start;
      std::size_t piece = static_cast<std::size_t>(
          std::lower_bound(pieces.begin(), pieces.end(), start, [](const CpuPiece& p, std::int64_t v) { return p.end <= v; }) -
          pieces.begin());
      for (auto it = first; it != last && calls[*it].start_ns < end; ++it) {
        const std::uint32_t c = *it;
        const RuntimeCall& call = calls[c];
        // A call that launched nothing and waits for nothing (cudaEventRecord, cudaGetDevice, ...) is CPU
        // time of the op around it. (An nsys export does not even keep those calls.)
        if (activities_of_call_begin_[c] == activities_of_call_begin_[c + 1] && !may_wait(call)) continue;
        if (call.start_ns < boundary) continue;  // overlaps the call before it: clocks out of step
        prev = add_pieces(pieces, piece, boundary, call.start_ns, prev);
        if (prev < 0) {  // nothing ran before the first call: an empty anchor for its launches
          PathNode anchor;
          anchor.order_ns = call.start_ns;
          anchor.label = kOutsideOpsLabel;
          prev = add(anchor);
        }
        call_node_[c] = prev;  // a launch hangs off the CPU time before its call
        touched_calls_.push_back(c);

        PathNode node;
        node.kind = PathElementKind::kRuntimeCall;
        node.label = call.name_id;
        node.order_ns = call.start_ns;
        node.preds[0] = prev;
        const std::int64_t call_end = std::min(call.end_ns(), end);
        std::int64_t work_from = call.start_ns;
        if (may_wait(call)) {
          if (const std::int32_t awaited = awaited_by(call); awaited >= 0) {
            const std::int64_t done = t_.activities[static_cast<std::size_t>(awaited)].end_ns();
            if (done > call.start_ns) {
              work_from = std::min(done, call_end);
              node.order_ns = work_from;
              awaited_links_.emplace_back(static_cast<std::int32_t>(nodes_.size()), awaited);
            }
          }
        }
        node.weight_ns = std::max<std::int64_t>(0, call_end - work_from);
        prev = add(node);
        boundary = std::max(boundary, call.end_ns());
      }
      add_pieces(pieces, piece, boundary, end, prev);
    }
  }

  // The GPU work the step's calls launched, and any activity without a launching call that runs in
  // the CPU window. Returns the end of the step's span.
  std::int64_t build_activities(std::int64_t start, std::int64_t end) {
    const auto& acts = t_.activities;
    std::int64_t span_end = end;
    auto take = [&](std::uint32_t i) {
      const GpuActivity& a = acts[i];
      PathNode node;
      node.kind = kind_of_activity(a.kind);
      node.label = a.name_id;
      node.order_ns = std::max(a.start_ns, start);
      node.weight_ns = a.end_ns() - node.order_ns;
      if (const std::int32_t call = launch_of_[i]; call >= 0) node.preds[1] = call_node_[static_cast<std::size_t>(call)];
      activity_node_[i] = add(node);
      touched_activities_.push_back(i);
      span_end = std::max(span_end, a.end_ns());
    };
    const std::size_t launched_from = touched_activities_.size();
    for (std::size_t k = 0, n = touched_calls_.size(); k < n; ++k) {
      const std::uint32_t c = touched_calls_[k];
      for (std::uint32_t j = activities_of_call_begin_[c]; j < activities_of_call_begin_[c + 1]; ++j) take(activities_of_call_[j]);
    }
    auto it = std::lower_bound(by_start_.begin(), by_start_.end(), start - longest_activity_ns_,
                               [&](std::uint32_t i, std::int64_t v) { return acts[i].start_ns < v; });
    for (; it != by_start_.end() && acts[*it].start_ns < end; ++it) {
      if (launch_of_[*it] < 0 && acts[*it].end_ns() > start && activity_node_[*it] < 0) take(*it);
    }
    // What a sync waited for is on the way even when an earlier step launched it.
    for (const auto& link : awaited_links_) {
      if (activity_node_[static_cast<std::size_t>(link.second)] < 0) take(static_cast<std::uint32_t>(link.second));
    }
    // Stream order, among the step's activities.
    for (std::size_t k = launched_from; k < touched_activities_.size(); ++k) {
      const std::uint32_t i = touched_activities_[k];
      if (const std::int32_t prev = stream_prev_[i]; prev >= 0) {
        nodes_[static_cast<std::size_t>(activity_node_[i])].preds[0] = activity_node_[static_cast<std::size_t>(prev)];
      }
    }
    for (const auto& [sync_node, awaited] : awaited_links_) {
      nodes_[static_cast<std::size_t>(sync_node)].preds[1] = activity_node_[static_cast<std::size_t>(awaited)];
    }
    awaited_links_.clear();
    return span_end;
  }

  StepCriticalPath longest_path(std::string step, std::int64_t start, std::int64_t end) {
    StepCriticalPath out;
    out.step = std::move(step);
    out.start_ns = start;
    out.end_ns = end;
    const std::size_t n = nodes_.size();
    if (n == 0) return out;
    order_.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) order_[i] = i;
    // Creation order breaks ties: a chain's nodes and a stream's activities were made in time order.
    sort_mostly_ordered(order_.begin(), order_.end(), [&](std::uint32_t a, std::uint32_t b) { return nodes_[a].order_ns < nodes_[b].order_ns; });
    dist_.assign(n, -1);
    best_.assign(n, -1);
    std::int32_t end_node = -1;
    for (const std::uint32_t v : order_) {
      std::int64_t from = 0;
      for (const std::int32_t p : nodes_[v].preds) {
        // A predecessor not yet done would close a cycle (clocks out of step): the edge is dropped.
        if (p < 0) continue;
        const std::int64_t d = dist_[static_cast<std::size_t>(p)];
        if (d >= 0 && (best_[v] < 0 || d > from)) {
          from = d;
          best_[v] = p;
        }
      }
      dist_[v] = from + nodes_[v].weight_ns;
      if (end_node < 0 || dist_[v] > dist_[static_cast<std::size_t>(end_node)]) end_node = static_cast<std::int32_t>(v);
    }
    ElementTotals elements;
    for (std::int32_t v = end_node; v >= 0; v = best_[static_cast<std::size_t>(v)]) {
      const PathNode& node = nodes_[static_cast<std::size_t>(v)];
      ++out.elements;
      if (node.weight_ns == 0) continue;
      if (keep_spans_) {
        out.spans.push_back(PathSpan{node.order_ns, node.order_ns + node.weight_ns, node.kind, label_name(node.label)});
      }
      (is_gpu_element(node.kind) ? out.gpu_ns : out.cpu_ns) += node.weight_ns;
      for (auto* map : {&elements, &totals_}) {
        PathElement& e = (*map)[element_key(node.kind, node.label)];
        e.kind = node.kind;
        ++e.count;
        e.total_ns += node.weight_ns;
      }
    }
    out.length_ns = out.cpu_ns + out.gpu_ns;
    std::reverse(out.spans.begin(), out.spans.end());
    out.top = top_elements(elements, out.length_ns);
    return out;
  }

 public:
  std::vector<PathElement> top_elements(ElementTotals& elements,
                                        std::int64_t whole_ns) const {
    // Labels that name the same thing (ProfilerStep#1 and #2 outside ops) are one element.
    std::map<std::pair<PathElementKind, std::string>, PathElement> by_name;
    for (auto& [key, e] : elements) {
      PathElement& merged = by_name[{e.kind, label_name(label_of_key(key))}];
      merged.kind = e.kind;
      merged.count += e.count;
      merged.total_ns += e.total_ns;
    }
    std::vector<PathElement> out;
    for (auto& [key, e] : by_name) {
      e.name = key.second;
      e.share = whole_ns > 0 ? static_cast<double>(e.total_ns) / static_cast<double>(whole_ns) : 0.0;
      out.push_back(std::move(e));
    }
    std::sort(out.begin(), out.end(), [](const PathElement& a, const PathElement& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    if (out.size() > top_) out.resize(top_);
    return out;
  }

 private:
  const RankTimeline& t_;
  const CpuNesting& nesting_;
  std::size_t top_;
  bool keep_spans_;
  std::vector<std::int32_t> launch_of_;
  std::vector<std::uint32_t> by_start_, by_end_;
  std::vector<std::int32_t> stream_prev_;
  std::int64_t longest_activity_ns_ = 0;
  std::vector<std::vector<CpuPiece>> pieces_;  // by nesting_.threads index
  std::vector<std::uint32_t> activities_of_call_begin_, activities_of_call_;  // launched activities by call
  std::vector<std::int32_t> call_node_, activity_node_;
  std::vector<std::uint32_t> touched_calls_, touched_activities_;
  std::vector<std::pair<std::int32_t, std::int32_t>> awaited_links_;  // sync call node, activity index
  std::vector<PathNode> nodes_;
  std::vector<std::uint32_t> order_;
  std::vector<std::int64_t> dist_;
  std::vector<std::int32_t> best_;
  ElementTotals totals_;
};

}  // namespace

std::string_view path_element_kind_name(PathElementKind kind) {
  switch (kind) {
    case PathElementKind::kCpu: return "cpu";
    case PathElementKind::kRuntimeCall: return "runtime";
    case PathElementKind::kKernel: return "kernel";
    case PathElementKind::kCommunication: return "nccl";
    case PathElementKind::kMemcpy: return "memcpy";
    case PathElementKind::kMemset: return "memset";
  }
  return "cpu";
}

CriticalPathReport critical_paths(const RankTimeline& timeline, const CpuNesting& nesting, std::size_t top, bool keep_spans,
                                  std::int64_t skip_step_start) {
  CriticalPathReport report;
  struct StepWindow {
    std::int64_t start, end;
    std::uint32_t name_id;
  };
  std::vector<StepWindow> steps;
  for (const CpuEvent& e : timeline.cpu_events) {
    if (e.kind == CpuEventKind::kUserAnnotation && e.start_ns != skip_step_start &&
        std::string_view(timeline.names[e.name_id]).starts_with(kStepPrefixCp)) {
      steps.push_back(StepWindow{e.start_ns, e.end_ns(), e.name_id});
    }
  }
  std::sort(steps.begin(), steps.end(), [](const StepWindow& a, const StepWindow& b) { return a.start < b.start; });
  if (timeline.activities.empty() && timeline.runtime_calls.empty()) {
    report.note = "no GPU activity and no CUDA calls: no critical path";
    return report;
  }
  CriticalPathBuilder builder(timeline, nesting, top, keep_spans);
  if (steps.empty()) {
    report.whole_trace = true;
    std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
    for (const GpuActivity& a : timeline.activities) first = std::min(first, a.start_ns), last = std::max(last, a.end_ns());
    for (const RuntimeCall& c : timeline.runtime_calls) first = std::min(first, c.start_ns), last = std::max(last, c.end_ns());
    for (const CpuEvent& e : timeline.cpu_events) {
      if (e.kind != CpuEventKind::kGpuUserAnnotation) first = std::min(first, e.start_ns), last = std::max(last, e.end_ns());
    }
    report.steps.push_back(builder.run("whole trace", first, last));
  } else {
    for (const StepWindow& s : steps) report.steps.push_back(builder.run(timeline.names[s.name_id], s.start, s.end));
  }
  for (const StepCriticalPath& s : report.steps) {
    report.steps_ns += s.duration_ns();
    report.cpu_ns += s.cpu_ns;
    report.gpu_ns += s.gpu_ns;
    report.gpu_bound_steps += s.gpu_bound();
  }
  report.top = builder.top_elements(builder.totals(), report.cpu_ns + report.gpu_ns);
  if (timeline.cpu_events.empty()) {
    report.note = "no cpu_op or annotation events: CPU time between CUDA calls is not counted";
  } else if (timeline.runtime_calls.empty()) {
    report.note = "no CUDA runtime calls: the CPU and the GPU are not linked";
  }
  return report;
}

}  // namespace gpuscope::trace

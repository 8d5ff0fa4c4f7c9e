#include "analysis/verdict_tracker.h"

namespace gpuscope::analysis {
namespace {

VerdictChange change_of(const GpuDiagnosis& g, std::optional<Verdict> from) {
  VerdictChange c;
  c.identity = g.identity;
  c.from = from;
  c.to = g.verdict;
  c.detail = g.detail;
  c.summary = g.summary;
  for (const auto& f : g.findings) c.findings.push_back(f.id);
  c.at_ms = g.at_ms;
  return c;
}

// When the verdict began: the diagnosis' own "since" where it found one (the last activity before an
// idle window), else the change's time.
std::pair<std::int64_t, bool> began(const GpuDiagnosis& g, std::int64_t change_ms) {
  if (g.since_ms) return {*g.since_ms, g.since_is_lower_bound};
  return {change_ms, false};
}

}  // namespace

std::vector<VerdictChange> VerdictTracker::update(Diagnosis& diagnosis) {
  std::vector<VerdictChange> out;
  for (auto& g : diagnosis.gpus) {
    auto [it, fresh] = states_.try_emplace(g.identity.key);
    State& s = it->second;
    if (fresh) {
      s.verdict = g.verdict;
      std::tie(s.since_ms, s.since_is_lower_bound) = began(g, g.at_ms);
      if (!g.since_ms) s.since_is_lower_bound = true;  // first seen: it held at least since then
      out.push_back(change_of(g, std::nullopt));
    } else if (g.verdict == s.verdict) {
      s.pending.reset();
      s.pending_count = 0;
    } else {
      if (s.pending != g.verdict) {
        s.pending = g.verdict;
        s.pending_count = 0;
        s.pending_change = change_of(g, s.verdict);
      }
      if (++s.pending_count >= min_hold_) {
        const auto [since, lower] = began(g, s.pending_change.at_ms);
        s.verdict = g.verdict;
        s.since_ms = since;
        s.since_is_lower_bound = lower;
        ++s.changes;
        out.push_back(std::move(s.pending_change));
        s.pending.reset();
        s.pending_count = 0;
      }
    }
    if (g.verdict == s.verdict) {
      // The diagnosis knows "idle since" exactly when it saw the last activity itself.
      if (g.since_ms && !g.since_is_lower_bound) {
        if (s.since_is_lower_bound) {
          s.since_ms = *g.since_ms;
          s.since_is_lower_bound = false;
        }
      } else {
        g.since_ms = s.since_ms;
        g.since_is_lower_bound = s.since_is_lower_bound;
      }
    }
  }
  return out;
}

}  // namespace gpuscope::analysis

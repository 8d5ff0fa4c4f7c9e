#include "fabric/fabric_counters.h"

#include <algorithm>
#include <limits>
#include <set>

namespace gpuscope::fabric {

namespace {
constexpr std::uint64_t k32BitRange = std::uint64_t{1} << 32U;
}

std::uint64_t counter_delta(std::uint64_t last, std::uint64_t now) {
  if (now >= last) return now - last;
  if (last < k32BitRange && last - now > k32BitRange / 2) return k32BitRange - last + now;
  return now;
}

std::uint64_t PortState::total(std::string_view file) const {
  auto it = std::lower_bound(totals.begin(), totals.end(), file, [](const auto& e, std::string_view f) { return e.first < f; });
  return it != totals.end() && it->first == file ? it->second : 0;
}

bool PortState::has(std::string_view file) const {
  auto it = std::lower_bound(totals.begin(), totals.end(), file, [](const auto& e, std::string_view f) { return e.first < f; });
  return it != totals.end() && it->first == file;
}

void FabricCounters::update(std::vector<PortReading> ports) {
  std::set<std::string> seen;
  for (auto& p : ports) {
    std::string key = p.key();
    seen.insert(key);
    auto [it, fresh] = entries_.try_emplace(key);
    Entry& e = it->second;
    for (const auto& [file, raw] : p.counters) {
      auto [c, first] = e.counters.try_emplace(file);
      // First seen: the total starts at what the hardware counted so far, so it reads as perfquery's
      // or ethtool's number until a wrap or reset parts them.
      c->second.total = first ? raw : c->second.total + counter_delta(c->second.last_raw, raw);
      c->second.last_raw = raw;
    }
    e.present = true;
    e.port = std::move(p);
    (void)fresh;
  }
  for (auto& [key, e] : entries_) {
    if (!seen.contains(key)) {
      e.present = false;
      e.port.up = false;
    }
  }
}

FabricState FabricCounters::state() const {
  FabricState out;
  out.ports.reserve(entries_.size());
  for (const auto& [key, e] : entries_) {
    PortState s;
    s.port = e.port;
    s.present = e.present;
    s.totals.reserve(e.counters.size());
    for (const auto& [file, c] : e.counters) s.totals.emplace_back(file, c.total);
    out.ports.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpuscope::fabric

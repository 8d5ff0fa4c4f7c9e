#include "sim/process_samples.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sim/gpu_physics.h"

namespace gpuscope::sim {

std::vector<ProcessUtilizationAverage> process_utilization_since(Simulator& sim, SimDevice& d, double t,
                                                                 unsigned long long last_seen_us) {
  const auto stamp_of = [&](std::uint64_t cell) {
    const std::int64_t ns = sim.clock().wall_ns_at(static_cast<double>(cell) * kCellS);
    return static_cast<unsigned long long>(std::max<std::int64_t>(0, ns / 1000));
  };
  const auto now_cell = static_cast<std::uint64_t>(std::floor(std::max(0.0, t) / kCellS));
  const std::uint64_t oldest = now_cell + 1 > kProcessSampleCells ? now_cell + 1 - kProcessSampleCells : 0;
  std::uint64_t first = now_cell + 1;
  for (std::uint64_t k = now_cell + 1; k-- > oldest;) {
    if (stamp_of(k) <= last_seen_us) break;
    first = k;
  }
  struct Sum {
    unsigned pid;
    double sm = 0, mem = 0;
    unsigned cells = 0;
  };
  std::vector<Sum> sums;
  // Oldest cell first: the physics only steps back once.
  for (std::uint64_t k = first; k <= now_cell; ++k) {
    const double at = k == now_cell ? t : static_cast<double>(k) * kCellS;
    const std::vector<GpuProcess> procs = sim.processes(d.index, at);
    if (procs.empty()) continue;
    const Reading& r = d.physics.at(at);
    const double n = static_cast<double>(procs.size());
    for (const GpuProcess& p : procs) {
      auto it = std::find_if(sums.begin(), sums.end(), [&](const Sum& s) { return s.pid == p.pid; });
      if (it == sums.end()) it = sums.insert(sums.end(), Sum{p.pid});
      it->sm += r.activity.util_gpu * 100.0 / n;
      it->mem += r.activity.util_mem * 100.0 / n;
      ++it->cells;
    }
  }
  d.physics.at(t);  // leave the physics at the present for the next caller
  std::vector<ProcessUtilizationAverage> out;
  if (sums.empty()) return out;
  // The newest cell's processes first, in its order; then those that left within the window.
  const std::vector<GpuProcess> current = sim.processes(d.index, t);
  auto rank = [&](unsigned pid) {
    auto it = std::find_if(current.begin(), current.end(), [&](const GpuProcess& p) { return p.pid == pid; });
    return static_cast<std::size_t>(it - current.begin());
  };
  std::stable_sort(sums.begin(), sums.end(), [&](const Sum& a, const Sum& b) { return rank(a.pid) < rank(b.pid); });
  const unsigned long long stamp = stamp_of(now_cell);
  for (const Sum& s : sums) {
    const double cells = static_cast<double>(s.cells);
    out.push_back({s.pid, stamp, static_cast<unsigned>(std::lround(s.sm / cells)),
                   static_cast<unsigned>(std::lround(s.mem / cells))});
  }
  return out;
}

}  // namespace gpuscope::sim

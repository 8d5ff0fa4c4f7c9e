// Monotonic totals over the fabric's raw sysfs counters: a 32-bit counter that wraps, a counter reset
// (a driver reload, `perfquery -R`) and a port that vanishes from sysfs and returns all leave the
// exported totals going only up, so rate() and increase() never see a fall.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fabric/sysfs_ports.h"

namespace gpuscope::fabric {

// How far a counter moved from `last` to `now`. A fall from a value that fits 32 bits by more than half
// that range is a 32-bit wrap (legacy PMA data counters, 32-bit netdev counters); any other fall is a
// reset, and the counter counts from 0 again (the new value is what it counted since).
std::uint64_t counter_delta(std::uint64_t last, std::uint64_t now);

// One port as exported: its latest reading (the last one seen while it is gone) and its totals.
struct PortState {
  PortReading port;  // its `counters` are the raw values last read
  bool present = true;
  std::vector<std::pair<std::string, std::uint64_t>> totals;  // by counter file, sorted
  std::uint64_t total(std::string_view file) const;           // 0 when the port has no such file
  bool has(std::string_view file) const;
};

struct FabricState {
  std::vector<PortState> ports;  // sorted by key; gone ports stay, present = false
};

class FabricCounters {
 public:
  // Folds one reading in: counters move by counter_delta, a port missing from `ports` is kept as gone
  // (its totals held, its last raw values kept so a return without a reset does not count twice).
  void update(std::vector<PortReading> ports);
  FabricState state() const;
  std::size_t ports_known() const { return entries_.size(); }

 private:
  struct Counter {
    std::uint64_t last_raw = 0;
    std::uint64_t total = 0;
  };
  struct Entry {
    PortReading port;
    bool present = true;
    std::map<std::string, Counter, std::less<>> counters;
  };
  std::map<std::string, Entry> entries_;  // by PortReading::key()
};

}  // namespace gpuscope::fabric

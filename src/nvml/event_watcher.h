// EventWatcher: a thread that waits on an NVML event set for XID and ECC events and counts them per
// GPU. Every delivered event is counted, so two equal XIDs in a row stay two events.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "model/snapshot.h"
#include "nvml/nvml_library.h"

namespace gpuscope::nvml {

class EventWatcher {
 public:
  // `devices[i]` is GPU i's handle (null for a GPU without one). Registers what each GPU supports
  // of SingleBitEcc, DoubleBitEcc and Xid, then starts the thread; without `threaded`, nothing waits
  // and the owner calls drain() (a virtual clock: events are due exactly when the clock says).
  EventWatcher(const NvmlLibrary& lib, std::vector<nvmlDevice_t> devices, bool threaded = true);
  ~EventWatcher();  // stops and joins within one wait timeout
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  // False when the library has no event API or no GPU accepted a registration.
  bool running() const { return set_ != nullptr; }
  // Counts every event already delivered, without waiting (the unthreaded mode).
  void drain();
  // Whether GPU `index` is registered for XID events (so "no XID seen" is a real 0).
  bool watches_xid(unsigned index) const;
  model::EventCounts counts(unsigned index) const;

  // How long one wait blocks: bounds how long stopping takes, and how often an idle agent wakes.
  static constexpr unsigned kWaitTimeoutMs = 500;

 private:
  void run();
  void record(const nvmlEventData_t& data);

  const NvmlLibrary& lib_;
  std::vector<nvmlDevice_t> devices_;
  std::vector<bool> xid_registered_;
  nvmlEventSet_t set_ = nullptr;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<model::EventCounts> counts_;
  std::thread thread_;
};

}  // namespace gpuscope::nvml

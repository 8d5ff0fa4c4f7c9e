#include "nvml/event_watcher.h"

#include <chrono>

namespace gpuscope::nvml {

EventWatcher::EventWatcher(const NvmlLibrary& lib, std::vector<nvmlDevice_t> devices, bool threaded)
    : lib_(lib), devices_(std::move(devices)), xid_registered_(devices_.size(), false), counts_(devices_.size()) {
  if (lib_.nvmlEventSetCreate == nullptr || lib_.nvmlDeviceRegisterEvents == nullptr ||
      lib_.nvmlEventSetWait_v2 == nullptr || lib_.nvmlEventSetCreate(&set_) != NVML_SUCCESS) {
    set_ = nullptr;
    return;
  }
  constexpr unsigned long long kWanted =
      nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeXidCriticalError;
  bool any = false;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == nullptr) continue;
    unsigned long long types = kWanted;
    if (lib_.nvmlDeviceGetSupportedEventTypes != nullptr) {
      unsigned long long supported = 0;
      if (lib_.nvmlDeviceGetSupportedEventTypes(devices_[i], &supported) == NVML_SUCCESS) types &= supported;
    }
    // Registering all at once fails as a whole on GPUs lacking ECC; XID alone still matters most.
    if (types != 0 && lib_.nvmlDeviceRegisterEvents(devices_[i], types, set_) == NVML_SUCCESS) {
      xid_registered_[i] = (types & nvmlEventTypeXidCriticalError) != 0;
      any = true;
    } else if (lib_.nvmlDeviceRegisterEvents(devices_[i], nvmlEventTypeXidCriticalError, set_) == NVML_SUCCESS) {
      xid_registered_[i] = true;
      any = true;
    }
  }
  if (!any) {
    if (lib_.nvmlEventSetFree != nullptr) lib_.nvmlEventSetFree(set_);
    set_ = nullptr;
    return;
  }
  if (threaded) thread_ = std::thread([this] { run(); });
}

EventWatcher::~EventWatcher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (set_ != nullptr && lib_.nvmlEventSetFree != nullptr) lib_.nvmlEventSetFree(set_);
}

bool EventWatcher::watches_xid(unsigned index) const {
  return running() && index < xid_registered_.size() && xid_registered_[index];
}

model::EventCounts EventWatcher::counts(unsigned index) const {
  std::lock_guard lock(mu_);
  return index < counts_.size() ? counts_[index] : model::EventCounts{};
}

void EventWatcher::run() {
  using clock = std::chrono::steady_clock;
  while (!stop_) {
    nvmlEventData_t data{};
    const auto started = clock::now();
    const nvmlReturn_t rc = lib_.nvmlEventSetWait_v2(set_, &data, kWaitTimeoutMs);
    if (rc == NVML_SUCCESS) {
      record(data);
      continue;
    }
    // A driver (or a frozen simulated clock) may answer TIMEOUT, or fail, without waiting: never
    // spin; wait out the rest of the timeout before asking again.
    const auto rest = std::chrono::milliseconds(kWaitTimeoutMs) - (clock::now() - started);
    if (rest > std::chrono::milliseconds(1)) std::this_thread::sleep_for(std::min<clock::duration>(rest, std::chrono::milliseconds(50)));
  }
}

void EventWatcher::drain() {
  if (set_ == nullptr || thread_.joinable()) return;
  nvmlEventData_t data{};
  while (lib_.nvmlEventSetWait_v2(set_, &data, 0) == NVML_SUCCESS) record(data);
}

void EventWatcher::record(const nvmlEventData_t& data) {
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] != data.device) continue;
    std::lock_guard lock(mu_);
    auto& c = counts_[i];
    if (data.eventType & nvmlEventTypeXidCriticalError) {
      ++c.xid_total;
      ++c.xid_by_code[data.eventData];
      c.last_xid = data.eventData;
    }
    if (data.eventType & nvmlEventTypeSingleBitEccError) ++c.single_bit_ecc;
    if (data.eventType & nvmlEventTypeDoubleBitEccError) ++c.double_bit_ecc;
    return;
  }
}

}  // namespace gpuscope::nvml

// What each NVML call costs the caller on a real driver: CPU time spent in the calling thread and
// wall time it blocks. The simulator spends it for real (spin, sleep) so a client's footprint measured
// against the simulator is what a real host would measure.
#pragma once

#include <chrono>
#include <expected>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpuscope::sim {

struct CallCost {
  std::chrono::nanoseconds cpu{0};      // spun on the calling thread (CLOCK_THREAD_CPUTIME_ID)
  std::chrono::nanoseconds blocked{0};  // slept, the thread off the CPU (the driver waiting on the GPU)

  bool zero() const { return cpu.count() == 0 && blocked.count() == 0; }
  CallCost& operator+=(const CallCost& o) {
    cpu += o.cpu;
    blocked += o.blocked;
    return *this;
  }
  friend bool operator==(const CallCost&, const CallCost&) = default;
};

// One field id of nvmlDeviceGetFieldValues. Fields with the same non-empty `shared` name come from one
// query inside the driver: a batch pays that query once (the most any of them costs), however many of
// them it names. Every other field is paid at each occurrence, repeats included.
struct FieldCost {
  CallCost cost;
  std::string shared;
};

struct CallCostTable {
  std::map<std::string, CallCost, std::less<>> functions;  // by exported symbol; absent: free
  std::map<unsigned, FieldCost> fields;                     // by field id; absent: free
  std::string profile = "none";                            // the profile it started from

  // One call of `function` (not nvmlDeviceGetFieldValues' fields: see field_values()).
  CallCost call(std::string_view function) const;
  // What the field ids of one nvmlDeviceGetFieldValues batch add to the call's own cost.
  CallCost field_values(std::span<const unsigned> field_ids) const;
  bool empty() const { return functions.empty() && fields.empty(); }
};

// The built-in profiles: "none" (nothing is charged: fast tests) and "h100-580" (one H100 SXM on
// driver 580.159.04, from shared/reference/real-h100/nvml_call_costs.txt). nullopt for another name.
std::optional<CallCostTable> cost_profile(std::string_view name);
std::string cost_profile_names();  // "none, h100-580"

// "4ms", "784.5us", "0.8µs", "250ns", "0.02s", "0": a cost duration, or what is wrong with it.
std::expected<std::chrono::nanoseconds, std::string> parse_cost_duration(std::string_view text);

// Spends `cost` on this thread: a busy loop until the thread's CPU clock has advanced by cost.cpu,
// then a sleep of cost.blocked. Nothing at all (not even a clock read) for a zero cost.
void spend(const CallCost& cost) noexcept;

// The cost of the NVML call in progress on this thread, spent when the call's wrapper ends: declared
// before the wrapper takes the library's lock, so it is spent after the lock is released and a call
// that costs milliseconds never holds up another thread's call (the real driver's ioctls run in
// parallel across threads).
class CallCharge {
 public:
  CallCharge() noexcept;
  ~CallCharge();
  CallCharge(const CallCharge&) = delete;
  CallCharge& operator=(const CallCharge&) = delete;

  // Adds to the charge of the call in progress on this thread (none: nothing happens).
  static void add(const CallCost& cost) noexcept;

 private:
  CallCost cost_;
  CallCharge* outer_;
};

}  // namespace gpuscope::sim

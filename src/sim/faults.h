// Injected driver faults: error codes, slow calls, a GPU that falls off the bus and comes back, and
// a process list that grows between a client's count probe and its read.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "sim/scenario.h"

namespace gpuscope::sim {

// Every symbol the library exports in its full build, for validating scenario `function:` names.
std::span<const std::string_view> nvml_function_names();
bool is_nvml_function(std::string_view name);

struct FaultDecision {
  int error = 0;  // nvmlReturn_t to answer instead of the real result; 0 = none
  double delay_s = 0;
  bool lost = false;
};

class FaultBook {
 public:
  explicit FaultBook(std::vector<FaultSpec> faults);

  // What injected faults do to `function` called at scenario time `t` about `gpu` (none: a call that
  // names no GPU). nvmlInit*, nvmlShutdown and nvmlErrorString match only faults naming them.
  FaultDecision decide(std::string_view function, std::optional<unsigned> gpu, double t) const;

  // Processes added to `gpu`'s compute list by process_list_grows faults so far.
  unsigned extra_processes(unsigned gpu, double t) const;
  // A client's count probe on `gpu` was answered INSUFFICIENT_SIZE: the list grows now, so its
  // read with the count it was given comes up short once more.
  void note_count_probe(unsigned gpu, double t);

 private:
  static bool matches_gpu(const FaultSpec& f, std::optional<unsigned> gpu);
  static bool active(const FaultSpec& f, double t) { return t >= f.at_s && t < f.end_s; }

  std::vector<FaultSpec> faults_;
  std::vector<unsigned> probes_;  // per fault: count probes that grew the list
};

}  // namespace gpuscope::sim

// ProgressMeter: a one-line progress bar for reading big traces, redrawn in place on a terminal at most
// ten times a second; the CLI only turns it on when stderr is a terminal and the input is large.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>

namespace gpuscope::trace {

class ProgressMeter {
 public:
  explicit ProgressMeter(std::ostream& out) : out_(out) {}
  void update(std::uint64_t done, std::uint64_t total);
  void finish();  // clears the line

 private:
  std::ostream& out_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
};

}  // namespace gpuscope::trace

// Deterministic noise for the simulated NVML: a value is a hash of (seed, gpu, signal, time bucket),
// never a stateful RNG, so any process reading the same scenario at the same t sees the same numbers.
#pragma once

#include <cstdint>

namespace gpuscope::sim {

// splitmix64's finalizer: a cheap bijective mixer whose output passes BigCrush, plenty for noise.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

// Each consumer of randomness names its own stream, so adding a signal never shifts another one.
enum class Signal : std::uint64_t {
  kSmActive = 1,
  kGrActive,
  kOccupancy,
  kTensor,
  kDram,
  kPcie,
  kNvlink,
  kPower,
  kUtil,
  kBurst,
  kReplay,
  kIdentity,
  kRetiredPage,
};

class Noise {
 public:
  Noise(std::uint64_t seed, unsigned gpu) : base_(splitmix64(seed ^ (static_cast<std::uint64_t>(gpu) << 40U))) {}

  std::uint64_t bits(Signal signal, std::uint64_t bucket) const {
    return splitmix64(base_ ^ splitmix64(static_cast<std::uint64_t>(signal) * 0xD6E8FEB86659FD93ULL ^ bucket));
  }
  // Uniform in [0, 1).
  double unit(Signal signal, std::uint64_t bucket) const {
    return static_cast<double>(bits(signal, bucket) >> 11U) * 0x1.0p-53;
  }
  // Uniform in [-1, 1).
  double symmetric(Signal signal, std::uint64_t bucket) const { return 2.0 * unit(signal, bucket) - 1.0; }

 private:
  std::uint64_t base_;
};

}  // namespace gpuscope::sim

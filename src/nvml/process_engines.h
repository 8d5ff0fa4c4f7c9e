// What each process does with a GPU's engines, as nvidia-smi pmon shows it: SM, memory, encoder,
// decoder, JPEG and optical-flow utilization per pid, from NVML's per-process utilization samples.
#pragma once

#include <optional>
#include <vector>

namespace gpuscope::nvml {

struct ProcessEngineSample {
  unsigned pid = 0;
  unsigned long long time_us = 0;  // the sample's CPU timestamp (µs since the epoch)
  unsigned sm = 0;                 // %
  unsigned mem = 0;
  unsigned enc = 0;
  unsigned dec = 0;
  std::optional<unsigned> jpg;  // absent when read through nvmlDeviceGetProcessUtilization (no jpg/ofa)
  std::optional<unsigned> ofa;
};

struct ProcessEngineReading {
  std::vector<ProcessEngineSample> samples;  // newer than the time asked for, the driver's order
  int error = 0;  // NVML's code when nothing could be read; 0 also when there was no newer sample
};

}  // namespace gpuscope::nvml

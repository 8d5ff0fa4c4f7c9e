// MigReader: one GPU's MIG devices at each reading. Reads the GPU's MIG mode (it may change while the
// agent runs) and, in MIG mode, each MIG device's identity (GPU/compute instance ids, UUID, profile,
// SMs), its memory and its own GPM ratios (nvmlGpmMigSampleGet per GPU instance), into
// GpuSample::mig_instances. Nothing here needs privileges: the profile name comes from matching the MIG
// device's attributes against the GPU's profile list, not from the root-only GPU instance handles.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/snapshot.h"
#include "nvml/nvml_abi.h"

namespace gpuscope::nvml {

class NvmlLibrary;

class MigReader {
 public:
  explicit MigReader(const NvmlLibrary& library) : library_(library) {}
  ~MigReader();
  MigReader(const MigReader&) = delete;
  MigReader& operator=(const MigReader&) = delete;

  // Fills g.mig_enabled and g.mig_instances for GPU `parent`. `gpm`: the GPU supports GPM, so each
  // instance's ratios are read (from the second reading of an instance on: a ratio needs two samples).
  // Returns GPU_IS_LOST if any call said so (the caller ends the GPU's reading), else NVML_SUCCESS.
  nvmlReturn_t read(nvmlDevice_t parent, bool gpm, model::GpuSample& g);

  // Before the first read(): in MIG mode, starts every MIG instance's GPM window, so that first read
  // has their ratios once the caller has waited the GPM minimum window. True if it started any.
  bool prime(nvmlDevice_t parent, bool gpm);

  // The GPU was lost or came back: forget every instance, profile and GPM sample.
  void reset();

 private:
  struct Profile {
    unsigned id = 0;
    std::string name;  // without the driver's "MIG " prefix
    unsigned slices = 0;
    unsigned sms = 0;
    unsigned jpeg = 0;
    unsigned ofa = 0;
    unsigned long long memory_mib = 0;
  };
  // What does not change while a MIG device exists, known by its UUID.
  struct Known {
    std::string profile;
    std::optional<unsigned> sm_count;
    std::optional<unsigned> slices;
  };
  struct GpmPair {
    nvmlGpmSample_t prev = nullptr;
    nvmlGpmSample_t cur = nullptr;
    bool prev_valid = false;
    bool seen = false;  // read at this reading
    std::string uuid;   // of the MIG device whose window this is: another one with the GPU instance's id starts afresh
  };

  void load_profiles(nvmlDevice_t parent);
  std::string profile_name(const nvmlDeviceAttributes_t& a) const;
  void read_gpm(nvmlDevice_t parent, unsigned gpu_instance_id, model::MigInstanceSample& m, bool& lost);
  void free_gpm(GpmPair& p);
  // Starts (or restarts) GPU instance `gi`'s window for MIG device `uuid`; true when its sample was taken.
  bool start_window(nvmlDevice_t parent, unsigned gi, const std::string& uuid, bool& lost);

  const NvmlLibrary& library_;
  bool primed_ = false;
  bool unsupported_ = false;  // the GPU has no MIG (NOT_SUPPORTED): not asked again until reset()
  unsigned max_devices_ = 0;
  bool profiles_loaded_ = false;
  std::vector<Profile> profiles_;
  std::map<std::string, Known> known_;    // by MIG device UUID, this MIG mode's devices
  std::map<unsigned, GpmPair> gpm_;       // by GPU instance id
};

}  // namespace gpuscope::nvml

// MIG through the C ABI: MIG device handles and their ids, UUIDs and names; memory and processes per
// instance; GPU instance profiles; GPM per instance against the parent's SM-weighted aggregate; layout
// changes over time (stale handles); and the scenario errors a MIG layout can make.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

constexpr unsigned kMigNoInstance = 0xFFFFFFFFU;
constexpr unsigned long long kMigMiB = 1048576ULL;

nvmlDevice_t mig_at(nvmlDevice_t gpu, unsigned index) {
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(gpu, index, &mig), NVML_SUCCESS) << index;
  return mig;
}

std::string mig_name(nvmlDevice_t dev) {
  char buf[96] = {};
  EXPECT_EQ(NVML(nvmlDeviceGetName)(dev, buf, sizeof buf), NVML_SUCCESS);
  return buf;
}

std::string mig_uuid_of(nvmlDevice_t dev) {
  char buf[96] = {};
  EXPECT_EQ(NVML(nvmlDeviceGetUUID)(dev, buf, sizeof buf), NVML_SUCCESS);
  return buf;
}

unsigned mig_gi_id(nvmlDevice_t dev) {
  unsigned id = 999;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(dev, &id), NVML_SUCCESS);
  return id;
}

nvmlMemory_v2_t mig_memory_v2(nvmlDevice_t dev) {
  nvmlMemory_v2_t m{};
  m.version = nvmlMemory_v2;
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(dev, &m), NVML_SUCCESS);
  return m;
}

// scenarios/mig.yaml places GPU 0's instances (largest first, each at the highest free slices): the
// 3g.40gb at memory slices 4-7 (GPU instance id 2), the 2g.20gb at 2-3 (id 4), the first 1g.10gb (idle)
// at 1 (id 8), the second (data-starved) at 0 (id 7). MIG device indices go by id.
struct MigExpected {
  unsigned gi;
  const char* profile;
  unsigned long long memory_mib;
  unsigned sms;
  unsigned start, size;
};
constexpr MigExpected kMigLayout[] = {
    {2, "3g.40gb", 40448, 60, 4, 4},
    {4, "2g.20gb", 20096, 32, 2, 2},
    {7, "1g.10gb", 9984, 16, 0, 1},
    {8, "1g.10gb", 9984, 16, 1, 1},
};

TEST(Mig, HandlesIdsUuidsAndNames) {
  Session s("mig", 60.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t gpu0 = s.gpu(0), gpu1 = s.gpu(1);
  unsigned cur = 9, pend = 9;
  ASSERT_EQ(NVML(nvmlDeviceGetMigMode)(gpu0, &cur, &pend), NVML_SUCCESS);
  EXPECT_EQ(cur, 1U);
  EXPECT_EQ(pend, 1U);
  ASSERT_EQ(NVML(nvmlDeviceGetMigMode)(gpu1, &cur, &pend), NVML_SUCCESS);
  EXPECT_EQ(cur, 0U);
  unsigned max = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(gpu0, &max), NVML_SUCCESS);
  EXPECT_EQ(max, 7U);

  std::set<std::string> uuids;
  std::set<nvmlDevice_t> handles;
  const std::regex uuid_re("MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  for (unsigned i = 0; i < std::size(kMigLayout); ++i) {
    SCOPED_TRACE(i);
    nvmlDevice_t mig = mig_at(gpu0, i);
    ASSERT_NE(mig, nullptr);
    EXPECT_NE(mig, gpu0);
    handles.insert(mig);
    unsigned is_mig = 9;
    ASSERT_EQ(NVML(nvmlDeviceIsMigDeviceHandle)(mig, &is_mig), NVML_SUCCESS);
    EXPECT_EQ(is_mig, 1U);
    nvmlDevice_t parent = nullptr;
    ASSERT_EQ(NVML(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(mig, &parent), NVML_SUCCESS);
    EXPECT_EQ(parent, gpu0);
    EXPECT_EQ(mig_gi_id(mig), kMigLayout[i].gi);
    unsigned ci = 999;
    ASSERT_EQ(NVML(nvmlDeviceGetComputeInstanceId)(mig, &ci), NVML_SUCCESS);
    EXPECT_EQ(ci, 0U);
    EXPECT_EQ(mig_name(mig), std::string("NVIDIA H100 80GB HBM3 MIG ") + kMigLayout[i].profile);
    const std::string uuid = mig_uuid_of(mig);
    EXPECT_TRUE(std::regex_match(uuid, uuid_re)) << uuid;
    uuids.insert(uuid);
    // The same handle every time it is asked for.
    EXPECT_EQ(mig_at(gpu0, i), mig);
    nvmlDeviceAttributes_t a{};
    ASSERT_EQ(NVML(nvmlDeviceGetAttributes_v2)(mig, &a), NVML_SUCCESS);
    EXPECT_EQ(a.multiprocessorCount, kMigLayout[i].sms);
    EXPECT_EQ(a.memorySizeMB, kMigLayout[i].memory_mib);
    EXPECT_EQ(a.gpuInstanceSliceCount, kMigLayout[i].profile[0] - '0');
    EXPECT_EQ(a.computeInstanceSliceCount, a.gpuInstanceSliceCount);
  }
  EXPECT_EQ(uuids.size(), std::size(kMigLayout));
  EXPECT_EQ(handles.size(), std::size(kMigLayout));
  EXPECT_FALSE(uuids.contains(mig_uuid_of(gpu0)));
  nvmlDevice_t mig = nullptr;
  for (unsigned i = 4; i < 7; ++i) EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(gpu0, i, &mig), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(gpu0, 7, &mig), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(gpu1, 0, &mig), NVML_ERROR_NOT_FOUND);

  // The full GPU is no MIG device and has no instance ids.
  unsigned is_mig = 9, id = 0;
  ASSERT_EQ(NVML(nvmlDeviceIsMigDeviceHandle)(gpu0, &is_mig), NVML_SUCCESS);
  EXPECT_EQ(is_mig, 0U);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(gpu0, &id), NVML_ERROR_NOT_SUPPORTED);
  nvmlDevice_t parent = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(gpu0, &parent), NVML_ERROR_INVALID_ARGUMENT);
  nvmlDeviceAttributes_t whole{};
  ASSERT_EQ(NVML(nvmlDeviceGetAttributes_v2)(gpu0, &whole), NVML_SUCCESS);
  EXPECT_EQ(whole.multiprocessorCount, 132U);
  EXPECT_EQ(whole.memorySizeMB, 81559U);

  // A MIG device's UUID finds it.
  nvmlDevice_t by_uuid = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetHandleByUUID)(mig_uuid_of(mig_at(gpu0, 2)).c_str(), &by_uuid), NVML_SUCCESS);
  EXPECT_EQ(by_uuid, mig_at(gpu0, 2));
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByUUID)("MIG-00000000-0000-5000-8000-000000000000", &by_uuid), NVML_ERROR_NOT_FOUND);

  // UUIDs derive from the seed and the layout: another session reads the same ones.
  const std::string first = mig_uuid_of(mig_at(gpu0, 0));
  Session again("mig", 61.0);
  EXPECT_EQ(mig_uuid_of(mig_at(again.gpu(0), 0)), first);
}

TEST(Mig, OtherQueriesOnAMigDeviceAreNotSupportedAndTheParentHasNoUtilization) {
  Session s("mig", 60.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t mig = mig_at(s.gpu(0), 0);
  unsigned value = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetPowerUsage)(mig, &value), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetTemperature)(mig, NVML_TEMPERATURE_GPU, &value), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetClockInfo)(mig, NVML_CLOCK_SM, &value), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetIndex)(mig, &value), NVML_ERROR_NOT_SUPPORTED);
  unsigned cur = 0, pend = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetMigMode)(mig, &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
  nvmlFieldValue_t field{};
  field.fieldId = 186;
  EXPECT_EQ(NVML(nvmlDeviceGetFieldValues)(mig, 1, &field), NVML_ERROR_NOT_SUPPORTED);
  nvmlUtilization_t util{};
  EXPECT_EQ(NVML(nvmlDeviceGetUtilizationRates)(mig, &util), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetUtilizationRates)(s.gpu(0), &util), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetUtilizationRates)(s.gpu(1), &util), NVML_SUCCESS);
  // The parent's own queries answer as ever.
  EXPECT_EQ(NVML(nvmlDeviceGetPowerUsage)(s.gpu(0), &value), NVML_SUCCESS);
}

TEST(Mig, MemoryPerInstanceSumsToTheParent) {
  Session s("mig", 60.0);
  ASSERT_TRUE(s.ok());
  // The scenario's processes by GPU instance: 30 GiB in 2, 12 GiB in 4, 6 GiB in 7, none in 8.
  const std::map<unsigned, unsigned long long> process_mib{{2, 30 * 1024}, {4, 12 * 1024}, {7, 6 * 1024}, {8, 0}};
  const nvmlMemory_v2_t parent = mig_memory_v2(s.gpu(0));
  unsigned long long used_sum = 0;
  for (unsigned i = 0; i < std::size(kMigLayout); ++i) {
    SCOPED_TRACE(i);
    nvmlDevice_t mig = mig_at(s.gpu(0), i);
    const nvmlMemory_v2_t m = mig_memory_v2(mig);
    EXPECT_EQ(m.total, kMigLayout[i].memory_mib * kMigMiB);
    EXPECT_EQ(m.reserved, 0U);
    EXPECT_EQ(m.used + m.free + m.reserved, m.total);
    // Its processes plus a few MiB of the instance's own.
    const unsigned long long procs = process_mib.at(kMigLayout[i].gi) * kMigMiB;
    EXPECT_GE(m.used, procs);
    EXPECT_LE(m.used, procs + 16 * kMigMiB);
    nvmlMemory_t v1{};
    ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo)(mig, &v1), NVML_SUCCESS);
    EXPECT_EQ(v1.total, m.total);
    EXPECT_EQ(v1.used + v1.free, v1.total);
    used_sum += m.used;
  }
  // The GPU holds the instances' memory and its own overhead besides.
  EXPECT_GT(parent.used, used_sum);
  EXPECT_LE(parent.used, used_sum + 16 * kMigMiB);
  EXPECT_EQ(parent.total, 81559 * kMigMiB);
}

TEST(Mig, ProcessesPerInstanceWithTheirIds) {
  Session s("mig", 60.0);
  ASSERT_TRUE(s.ok());
  const std::map<unsigned, unsigned> instance_of{{5001, 2}, {5002, 4}, {5003, 7}};
  std::map<unsigned, unsigned> seen;
  for (const nvmlProcessInfo_t& p : processes(s.gpu(0))) {
    EXPECT_EQ(p.computeInstanceId, 0U) << p.pid;
    seen[p.pid] = p.gpuInstanceId;
  }
  EXPECT_EQ(seen, instance_of);
  const auto whole = processes(s.gpu(1));
  ASSERT_EQ(whole.size(), 1U);
  EXPECT_EQ(whole[0].gpuInstanceId, kMigNoInstance);
  EXPECT_EQ(whole[0].computeInstanceId, kMigNoInstance);

  for (unsigned i = 0; i < std::size(kMigLayout); ++i) {
    SCOPED_TRACE(i);
    nvmlDevice_t mig = mig_at(s.gpu(0), i);
    std::set<unsigned> own;
    for (const nvmlProcessInfo_t& p : processes(mig)) {
      EXPECT_EQ(p.gpuInstanceId, kMigLayout[i].gi);
      own.insert(p.pid);
    }
    std::set<unsigned> expected;
    for (const auto& [pid, gi] : instance_of) {
      if (gi == kMigLayout[i].gi) expected.insert(pid);
    }
    EXPECT_EQ(own, expected);
    // The older versions list the same processes.
    unsigned n = 8;
    nvmlProcessInfo_t v2[8]{};
    ASSERT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v2)(mig, &n, v2), NVML_SUCCESS);
    EXPECT_EQ(n, expected.size());
    n = 8;
    nvmlProcessInfo_v1_t v1[8]{};
    ASSERT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses)(mig, &n, v1), NVML_SUCCESS);
    EXPECT_EQ(n, expected.size());
    if (n == 1) {
      EXPECT_EQ(v1[0].pid, *expected.begin());
    }
  }
}

// The H100 80GB table of notes/mig_design.md: index -> id, name, slices, SMs, memory MiB, instances.
struct MigProfileRow {
  unsigned index, id;
  const char* name;
  unsigned slices, sms;
  unsigned long long memory_mib;
  unsigned instances;
};
constexpr MigProfileRow kMigH100Profiles[] = {
    {0, 19, "MIG 1g.10gb", 1, 16, 9984, 7},   {7, 20, "MIG 1g.10gb+me", 1, 16, 9984, 1},
    {9, 15, "MIG 1g.20gb", 1, 26, 20096, 4},  {1, 14, "MIG 2g.20gb", 2, 32, 20096, 3},
    {2, 9, "MIG 3g.40gb", 3, 60, 40448, 2},   {3, 5, "MIG 4g.40gb", 4, 64, 40448, 1},
    {4, 0, "MIG 7g.80gb", 7, 132, 81152, 1},
};

TEST(Mig, ProfileInfoByIndexAndByIdAsTheTable) {
  Session s("mig", 60.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t gpu0 = s.gpu(0);
  for (const MigProfileRow& row : kMigH100Profiles) {
    SCOPED_TRACE(row.name);
    for (bool by_id : {false, true}) {
      nvmlGpuInstanceProfileInfo_v2_t info{};
      info.version = nvmlGpuInstanceProfileInfo_v2;
      const nvmlReturn_t r = by_id ? NVML(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(gpu0, row.id, &info)
                                   : NVML(nvmlDeviceGetGpuInstanceProfileInfoV)(gpu0, row.index, &info);
      ASSERT_EQ(r, NVML_SUCCESS);
      EXPECT_EQ(info.version, nvmlGpuInstanceProfileInfo_v2);
      EXPECT_EQ(info.id, row.id);
      EXPECT_STREQ(info.name, row.name);
      EXPECT_EQ(info.sliceCount, row.slices);
      EXPECT_EQ(info.multiprocessorCount, row.sms);
      EXPECT_EQ(info.memorySizeMB, row.memory_mib);
      EXPECT_EQ(info.instanceCount, row.instances);
    }
  }
  nvmlGpuInstanceProfileInfo_v2_t info{};
  info.version = 1;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfoV)(gpu0, 0, &info), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(gpu0, 19, &info), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  info.version = nvmlGpuInstanceProfileInfo_v2;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfoV)(gpu0, NVML_GPU_INSTANCE_PROFILE_8_SLICE, &info),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfoV)(gpu0, NVML_GPU_INSTANCE_PROFILE_COUNT, &info),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfoByIdV)(gpu0, 1, &info), NVML_ERROR_NOT_SUPPORTED);
  // MIG off: no profiles.
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfoV)(s.gpu(1), 0, &info), NVML_ERROR_NOT_SUPPORTED);

  // GPU instances by id and by profile.
  for (const MigExpected& e : kMigLayout) {
    SCOPED_TRACE(e.gi);
    nvmlGpuInstance_t gi = nullptr;
    ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(gpu0, e.gi, &gi), NVML_SUCCESS);
    nvmlGpuInstanceInfo_t gi_info{};
    ASSERT_EQ(NVML(nvmlGpuInstanceGetInfo)(gi, &gi_info), NVML_SUCCESS);
    EXPECT_EQ(gi_info.device, gpu0);
    EXPECT_EQ(gi_info.id, e.gi);
    EXPECT_EQ(gi_info.placement.start, e.start);
    EXPECT_EQ(gi_info.placement.size, e.size);
    const auto row = std::find_if(std::begin(kMigH100Profiles), std::end(kMigH100Profiles),
                                  [&](const MigProfileRow& r) { return std::string(r.name) == std::string("MIG ") + e.profile; });
    ASSERT_NE(row, std::end(kMigH100Profiles));
    EXPECT_EQ(gi_info.profileId, row->id);
  }
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(gpu0, 1, &gi), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(s.gpu(1), 0, &gi), NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuInstance_t list[7] = {};
  unsigned count = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstances)(gpu0, 19, list, &count), NVML_SUCCESS);
  ASSERT_EQ(count, 2U);
  std::set<unsigned> ids;
  for (unsigned i = 0; i < count; ++i) {
    nvmlGpuInstanceInfo_t gi_info{};
    ASSERT_EQ(NVML(nvmlGpuInstanceGetInfo)(list[i], &gi_info), NVML_SUCCESS);
    ids.insert(gi_info.id);
  }
  EXPECT_EQ(ids, (std::set<unsigned>{7, 8}));
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstances)(gpu0, 0, list, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 0U);
}

TEST(Mig, A100ProfilesByModel) {
  Session s(
      "gpus:\n  count: 2\n  model: NVIDIA A100-SXM4-80GB\n  overrides:\n"
      "    - {gpu: 0, mig: [{profile: 3g.40gb}, {profile: 4g.40gb}]}\n"
      "    - {gpu: 1, model: NVIDIA A100-PCIE-40GB, mig: [{profile: 1g.5gb}, {profile: 3g.20gb}]}\n");
  ASSERT_TRUE(s.ok()) << NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
  // 4g at slices 0-3 (id 1), 3g at 4-7 (id 2).
  EXPECT_EQ(mig_name(mig_at(s.gpu(0), 0)), "NVIDIA A100-SXM4-80GB MIG 4g.40gb");
  EXPECT_EQ(mig_gi_id(mig_at(s.gpu(0), 1)), 2U);
  nvmlDeviceAttributes_t a{};
  ASSERT_EQ(NVML(nvmlDeviceGetAttributes_v2)(mig_at(s.gpu(0), 1), &a), NVML_SUCCESS);
  EXPECT_EQ(a.multiprocessorCount, 42U);
  EXPECT_EQ(mig_name(mig_at(s.gpu(1), 1)), "NVIDIA A100-PCIE-40GB MIG 1g.5gb");
  nvmlGpuInstanceProfileInfo_v2_t info{};
  info.version = nvmlGpuInstanceProfileInfo_v2;
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceProfileInfoV)(s.gpu(1), NVML_GPU_INSTANCE_PROFILE_7_SLICE, &info), NVML_SUCCESS);
  EXPECT_STREQ(info.name, "MIG 7g.40gb");
  EXPECT_EQ(info.multiprocessorCount, 98U);
  // No GPM on Ampere, for the GPU or its instances.
  nvmlGpmSample_t sample = nullptr;
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&sample), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpmSampleGet)(mig_at(s.gpu(0), 0), sample), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlGpmMigSampleGet)(s.gpu(0), 1, sample), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlGpmSampleFree)(sample), NVML_SUCCESS);
}

// An instance's GPM is a function of t: reading far ahead and coming back, or another session, gives
// the same values.
TEST(Mig, InstanceGpmIsTheSameWhateverWasReadBefore) {
  Session s("mig", 100.0);
  ASSERT_TRUE(s.ok());
  nvmlGpmSample_t early = nullptr, late = nullptr;
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&early), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&late), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmMigSampleGet)(s.gpu(0), 7, early), NVML_SUCCESS);  // the data-starved 1g.10gb
  s.at(160.0);
  ASSERT_EQ(NVML(nvmlGpmMigSampleGet)(s.gpu(0), 7, late), NVML_SUCCESS);
  const auto first = gpm_between(early, late);
  s.at(590.0);
  ASSERT_EQ(NVML(nvmlGpmMigSampleGet)(s.gpu(0), 7, late), NVML_SUCCESS);  // far ahead
  s.at(100.0);
  ASSERT_EQ(NVML(nvmlGpmMigSampleGet)(s.gpu(0), 7, early), NVML_SUCCESS);  // and back
  s.at(160.0);
  ASSERT_EQ(NVML(nvmlGpmMigSampleGet)(s.gpu(0), 7, late), NVML_SUCCESS);
  EXPECT_EQ(gpm_between(early, late), first);
  // The data-starved instance's 60 s mean: busy in part, never as busy as steady training.
  EXPECT_GT(first.at(NVML_GPM_METRIC_SM_UTIL), 0.0);
  EXPECT_LT(first.at(NVML_GPM_METRIC_SM_UTIL), 80.0);
  for (nvmlGpmSample_t x : {early, late}) EXPECT_EQ(NVML(nvmlGpmSampleFree)(x), NVML_SUCCESS);
}

// One 3g.40gb training beside an idle 1g.10gb: the parent's GPM is the instances' SM-weighted sum,
// the SMs of no instance counting 0, so every ratio of the GPU is 60/132 of the training instance's.
constexpr const char* kMigGpmScenario =
    "gpus:\n  count: 1\n  model: NVIDIA H100 80GB HBM3\n  overrides:\n"
    "    - gpu: 0\n      mig: [{profile: 3g.40gb, workload: training}, {profile: 1g.10gb, workload: idle}]\n";

TEST(Mig, GpmPerInstanceAndTheParentsWeightedAggregate) {
  Session s(kMigGpmScenario, 100.0);
  ASSERT_TRUE(s.ok()) << NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
  nvmlDevice_t gpu = s.gpu(0);
  nvmlDevice_t train = mig_at(gpu, 0);  // 3g.40gb, id 2
  nvmlDevice_t idle = mig_at(gpu, 1);   // 1g.10gb at slice 3 (the 3g.40gb holds 4-7): id 10
  ASSERT_EQ(mig_gi_id(train), 2U);
  ASSERT_EQ(mig_gi_id(idle), 10U);
  const double weight = 60.0 / 132.0;

  const auto instance = gpm_now(train);
  const auto parent = gpm_now(gpu);
  const auto quiet = gpm_now(idle);
  // Training's documented SM activity, ~0.80 with +-4% noise, as the instance's own share.
  ASSERT_TRUE(instance.contains(NVML_GPM_METRIC_SM_UTIL));
  EXPECT_GE(instance.at(NVML_GPM_METRIC_SM_UTIL), 80.0 * 0.96 - 1e-9);
  EXPECT_LE(instance.at(NVML_GPM_METRIC_SM_UTIL), 80.0 * 1.04 + 1e-9);
  EXPECT_EQ(quiet.at(NVML_GPM_METRIC_SM_UTIL), 0.0);
  for (unsigned id : {NVML_GPM_METRIC_GRAPHICS_UTIL, NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
                      NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL}) {
    EXPECT_NEAR(parent.at(id), weight * instance.at(id), 1e-9) << id;
  }
  // MIG instances carry no NVLink traffic.
  EXPECT_EQ(instance.at(NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC), 0.0);

  // Over an interval: samples of the instance through its MIG handle and through the parent's
  // nvmlGpmMigSampleGet agree, and the parent's average is the weighted one.
  nvmlGpmSample_t a1, a2, b1, b2, p1, p2;
  for (nvmlGpmSample_t* x : {&a1, &a2, &b1, &b2, &p1, &p2}) ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(x), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleGet)(train, a1), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmMigSampleGet)(gpu, 2, b1), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleGet)(gpu, p1), NVML_SUCCESS);
  s.at(160.5);
  ASSERT_EQ(NVML(nvmlGpmSampleGet)(train, a2), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmMigSampleGet)(gpu, 2, b2), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleGet)(gpu, p2), NVML_SUCCESS);
  const auto via_handle = gpm_between(a1, a2);
  const auto via_parent = gpm_between(b1, b2);
  const auto whole = gpm_between(p1, p2);
  for (const auto& [id, v] : via_handle) {
    EXPECT_NEAR(via_parent.at(id), v, 1e-9) << id;
    if (id < NVML_GPM_METRIC_PCIE_TX_PER_SEC) {
      EXPECT_NEAR(whole.at(id), weight * v, 1e-6) << id;
    }
  }
  // A parent's sample and an instance's cannot be compared; an instance id the GPU lacks is refused.
  auto get = std::make_unique<nvmlGpmMetricsGet_t>();
  get->version = NVML_GPM_METRICS_GET_VERSION;
  get->numMetrics = 1;
  get->sample1 = p1;
  get->sample2 = a2;
  get->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
  EXPECT_EQ(NVML(nvmlGpmMetricsGet)(get.get()), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlGpmMigSampleGet)(gpu, 5, a1), NVML_ERROR_INVALID_ARGUMENT);
  for (nvmlGpmSample_t x : {a1, a2, b1, b2, p1, p2}) EXPECT_EQ(NVML(nvmlGpmSampleFree)(x), NVML_SUCCESS);
}

TEST(Mig, ParentPowerFollowsTheInstancesCombinedActivity) {
  // GPU 0: a 3g.40gb training; GPU 1: the same layout idle; GPU 2: the whole GPU training.
  Session s(
      "gpus:\n  count: 3\n  model: NVIDIA H100 80GB HBM3\n  overrides:\n"
      "    - {gpu: 0, mig: [{profile: 3g.40gb, workload: training}]}\n"
      "    - {gpu: 1, mig: [{profile: 3g.40gb, workload: idle}]}\n"
      "workload:\n  profile: training\n",
      120.0);
  ASSERT_TRUE(s.ok()) << NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
  unsigned p0 = 0, p1 = 0, p2 = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetPowerUsage)(s.gpu(0), &p0), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetPowerUsage)(s.gpu(1), &p1), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetPowerUsage)(s.gpu(2), &p2), NVML_SUCCESS);
  EXPECT_GT(p0, p1 + 50000);  // busy instance: well above the idle GPU
  EXPECT_LT(p0, p2 - 50000);  // 60 of 132 SMs busy: well under the whole GPU training
}

TEST(Mig, LayoutChangesOverTime) {
  Session s("mig", 599.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t gpu0 = s.gpu(0);
  std::vector<nvmlDevice_t> before;
  std::vector<std::string> uuids;
  for (unsigned i = 0; i < std::size(kMigLayout); ++i) {
    before.push_back(mig_at(gpu0, i));
    uuids.push_back(mig_uuid_of(before.back()));
  }
  nvmlGpuInstance_t destroyed_gi = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetGpuInstanceById)(gpu0, 4, &destroyed_gi), NVML_SUCCESS);

  // 10m: the 2g.20gb (index 1, id 4) is destroyed; the others live on with their handles and UUIDs.
  s.at(600.0);
  char name[96];
  unsigned is_mig = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetName)(before[1], name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceIsMigDeviceHandle)(before[1], &is_mig), NVML_ERROR_INVALID_ARGUMENT);
  nvmlGpuInstanceInfo_t gi_info{};
  EXPECT_EQ(NVML(nvmlGpuInstanceGetInfo)(destroyed_gi, &gi_info), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mig_at(gpu0, 0), before[0]);
  EXPECT_EQ(mig_at(gpu0, 1), before[2]);
  EXPECT_EQ(mig_at(gpu0, 2), before[3]);
  EXPECT_EQ(mig_uuid_of(before[2]), uuids[2]);
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(gpu0, 3, &mig), NVML_ERROR_NOT_FOUND);
  std::set<unsigned> pids;
  for (const nvmlProcessInfo_t& p : processes(gpu0)) pids.insert(p.pid);
  EXPECT_EQ(pids, (std::set<unsigned>{5001, 5003}));  // the server went with its instance

  // Back in time, the instance is there again with the same handle.
  s.at(599.0);
  EXPECT_EQ(mig_at(gpu0, 1), before[1]);

  // 20m: MIG off. Every MIG handle is stale; the GPU is whole again.
  s.at(1200.0);
  unsigned cur = 9, pend = 9;
  ASSERT_EQ(NVML(nvmlDeviceGetMigMode)(gpu0, &cur, &pend), NVML_SUCCESS);
  EXPECT_EQ(cur, 0U);
  for (nvmlDevice_t old : before) EXPECT_EQ(NVML(nvmlDeviceGetName)(old, name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(gpu0, 0, &mig), NVML_ERROR_NOT_FOUND);
  nvmlUtilization_t util{};
  EXPECT_EQ(NVML(nvmlDeviceGetUtilizationRates)(gpu0, &util), NVML_SUCCESS);
  EXPECT_GT(util.gpu, 50U);  // training as a whole GPU
  const auto procs = processes(gpu0);
  ASSERT_EQ(procs.size(), 1U);
  EXPECT_EQ(procs[0].pid, 5004U);
  EXPECT_EQ(procs[0].gpuInstanceId, kMigNoInstance);
}

TEST(Mig, CallsAreCountedAndFaultsApply) {
  Session s(
      "gpus:\n  count: 1\n  model: NVIDIA H100 80GB HBM3\n  overrides:\n    - {gpu: 0, mig: [{profile: 7g.80gb}]}\n"
      "faults:\n  - {type: error, function: nvmlDeviceGetGpuInstanceId, error: NVML_ERROR_TIMEOUT}\n");
  ASSERT_TRUE(s.ok()) << NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
  nvmlDevice_t mig = mig_at(s.gpu(0), 0);
  unsigned id = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(mig, &id), NVML_ERROR_TIMEOUT);
  unsigned long long before = 0, after = 0;
  ASSERT_EQ(NVML(gpuscopeSimGetCallCount)("nvmlDeviceIsMigDeviceHandle", &before), NVML_SUCCESS);
  unsigned is_mig = 0;
  ASSERT_EQ(NVML(nvmlDeviceIsMigDeviceHandle)(mig, &is_mig), NVML_SUCCESS);
  ASSERT_EQ(NVML(gpuscopeSimGetCallCount)("nvmlDeviceIsMigDeviceHandle", &after), NVML_SUCCESS);
  EXPECT_EQ(after, before + 1);
}

// A bad MIG layout fails init with one line naming the file, the line and what is wrong.
std::string mig_load_error(const std::string& yaml, std::string* path) {
  static int counter = 0;
  *path = write_temp_file("mig-bad-" + std::to_string(++counter) + ".yaml", yaml);
  Session s(*path);
  EXPECT_EQ(s.init_result(), NVML_ERROR_UNKNOWN);
  return NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
}

TEST(Mig, BadLayoutsFailWithFileLineAndReason) {
  const std::string h100 = "gpus:\n  count: 2\n  model: NVIDIA H100 80GB HBM3\n  overrides:\n    - gpu: 0\n";
  struct Case {
    std::string yaml;
    int line;
    const char* message;
  };
  const std::vector<Case> cases = {
      {h100 + "      mig:\n        - {profile: 3g.41gb}\n", 7,
       "unknown MIG profile '3g.41gb' for a NVIDIA H100 80GB HBM3 (known: 1g.10gb, 2g.20gb, 3g.40gb"},
      {"gpus:\n  count: 1\n  model: NVIDIA L4\n  overrides:\n    - gpu: 0\n      mig:\n        - {profile: 1g.10gb}\n",
       7, "a NVIDIA L4 has no MIG"},
      {h100 + "      mig:\n        - {profile: 3g.40gb}\n        - {profile: 3g.40gb}\n        - {profile: 3g.40gb}\n",
       9, "at most 2 3g.40gb instances on a NVIDIA H100 80GB HBM3"},
      {h100 + "      mig:\n        - {profile: 2g.20gb, id: 3}\n        - {profile: 1g.10gb, id: 8}\n", 8,
       "1g.10gb id 8 overlaps the slices of 2g.20gb id 3"},
      {h100 + "      mig:\n        - {profile: 4g.40gb}\n        - {profile: 3g.40gb}\n        - {profile: 1g.10gb}\n",
       9, "no room left for a 1g.10gb instance: the layout needs more than the GPU's 7 compute / 8 memory slices"},
      {h100 + "      mig:\n        - {profile: 3g.40gb, id: 7}\n", 7, "a 3g.40gb instance cannot have id 7 (its ids: 1, 2)"},
      {h100 + "      mig: [{profile: 3g.40gb}]\nprocesses:\n  - pid: 1\n    gpu: 0\n    memory: 1GiB\n    instance: 5\n",
       11, "gpu 0 has no GPU instance 5 (its ids: 2)"},
      {h100 + "      mig: [{profile: 1g.10gb}]\nprocesses:\n  - pid: 1\n    gpu: 0\n    memory: 20GiB\n    instance: 13\n",
       11, "does not fit GPU instance 13 (1g.10gb)"},
      {h100 + "      mig: [{profile: 1g.10gb}]\nprocesses:\n  - pid: 1\n    gpu: 1\n    memory: 1GiB\n    instance: 13\n",
       11, "gpu 1 has no MIG instances"},
      {h100 + "      mig: true\n      mig_timeline:\n        - {at: 0s, mig: false}\n", 8, "mig_timeline must go forward"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    std::string path;
    const std::string error = mig_load_error(c.yaml, &path);
    const std::string where = "Unknown Error: " + path + ":" + std::to_string(c.line) + ": ";
    EXPECT_TRUE(error.starts_with(where)) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace gpuscope::sim::testing

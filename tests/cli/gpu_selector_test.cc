#include "cli/gpu_selector.h"

#include <gtest/gtest.h>

namespace gpuscope::cli {
namespace {

std::vector<model::GpuInfo> three_gpus() {
  std::vector<model::GpuInfo> gpus(3);
  const char* uuids[] = {"GPU-aaaaaaaa-0000-0000-0000-000000000000", "GPU-bbbbbbbb-0000-0000-0000-000000000000",
                         "GPU-cccccccc-0000-0000-0000-000000000000"};
  const char* buses[] = {"00000000:18:00.0", "00000000:2A:00.0", "00000001:9B:00.0"};
  for (unsigned i = 0; i < 3; ++i) {
    gpus[i].index = i;
    gpus[i].uuid = uuids[i];
    gpus[i].pci_bus_id = buses[i];
  }
  return gpus;
}

using Positions = std::vector<std::size_t>;

TEST(SelectGpus, EmptyListIsEveryGpu) { EXPECT_EQ(select_gpus("", three_gpus()), (Positions{0, 1, 2})); }

TEST(SelectGpus, ByIndex) { EXPECT_EQ(select_gpus("2,0", three_gpus()), (Positions{0, 2})); }

TEST(SelectGpus, ByUuidCaseInsensitive) {
  EXPECT_EQ(select_gpus("gpu-BBBBBBBB-0000-0000-0000-000000000000", three_gpus()), (Positions{1}));
}

TEST(SelectGpus, ByPciBusIdInNvmlsSpellings) {
  auto gpus = three_gpus();
  EXPECT_EQ(select_gpus("00000000:2A:00.0", gpus), (Positions{1}));
  EXPECT_EQ(select_gpus("0000:2a:00.0", gpus), (Positions{1}));
  EXPECT_EQ(select_gpus("2A:00.0", gpus), (Positions{1}));
  EXPECT_EQ(select_gpus("0001:9b:00.0", gpus), (Positions{2}));
  // Without a domain the id means domain 0, which is not GPU 2's.
  EXPECT_FALSE(select_gpus("9b:00.0", gpus).has_value());
}

TEST(SelectGpus, MixedAndRepeatedIdsGiveEachGpuOnceInIndexOrder) {
  EXPECT_EQ(select_gpus("18:00.0,2,0,GPU-aaaaaaaa-0000-0000-0000-000000000000", three_gpus()), (Positions{0, 2}));
}

TEST(SelectGpus, UnknownIdIsNamed) {
  auto gpus = three_gpus();
  auto r = select_gpus("0,7", gpus);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), "7");
  EXPECT_EQ(select_gpus("GPU-nope", gpus).error(), "GPU-nope");
  EXPECT_EQ(select_gpus("zz:00.0", gpus).error(), "zz:00.0");
  EXPECT_EQ(select_gpus("99999999999999999999", gpus).error(), "99999999999999999999");
}

TEST(SplitGpuIds, RejectsEmptyEntries) {
  EXPECT_EQ(split_gpu_ids(" 0 , 1").value(), (std::vector<std::string>{"0", "1"}));
  EXPECT_FALSE(split_gpu_ids("0,,1").has_value());
  EXPECT_FALSE(split_gpu_ids("").has_value());
}

TEST(ViewsOf, PairsInfoWithItsSample) {
  auto gpus = three_gpus();
  model::Snapshot snap;
  snap.gpus.resize(3);
  for (unsigned i = 0; i < 3; ++i) {
    snap.gpus[i].index = i;
    snap.gpus[i][model::FieldId::kGpuTemp] = model::FieldValue::of(40 + i);
  }
  Positions chosen{0, 2};
  auto views = views_of(gpus, snap, chosen);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[1].info.index, 2u);
  EXPECT_EQ(views[1].sample[model::FieldId::kGpuTemp].value, 42);
}

TEST(ViewsOf, GpuMissingFromTheSnapshotIsDown) {
  auto gpus = three_gpus();
  model::Snapshot snap;
  snap.gpus.resize(1);
  snap.gpus[0].index = 0;
  Positions chosen{1};
  auto views = views_of(gpus, snap, chosen);
  ASSERT_EQ(views.size(), 1u);
  EXPECT_FALSE(views[0].sample.up);
  EXPECT_EQ(views[0].info.index, 1u);
}

}  // namespace
}  // namespace gpuscope::cli

// `gpuscope top` on a GPU in MIG mode: instance rows under their GPU, processes named and grouped by
// their GPU instance, and the reading turned into a frame.
#include <gtest/gtest.h>

#include <string>

#include "export/sample_mig_gpus.h"
#include "top/local_reader.h"
#include "top/screen_buffer.h"
#include "top/top_model.h"
#include "top/top_screen.h"

namespace gpuscope::top {
namespace {

ProcessRow top_mig_process(unsigned pid, unsigned gpu, std::optional<unsigned> gi, std::uint64_t mem) {
  ProcessRow p{pid, gpu, "alice", "python train" + std::to_string(pid) + ".py", mem, std::nullopt};
  p.gpu_instance_id = gi;
  return p;
}

// A MIG GPU 0 (3g.40gb with 10240 of 40960 MiB, SM 62 %, tensor 45 %, in ml/trainer-0; an idle 1g.10gb
// with 0 of 10240 MiB and no GPM yet) beside a plain GPU 1.
Frame top_mig_frame() {
  GpuFrame g0;
  g0.index = 0;
  g0.name = "NVIDIA H100 80GB HBM3";
  g0.value(Metric::kMemoryUsedMiB) = 10240;
  g0.value(Metric::kMemoryTotalMiB) = 81559;
  MigInstanceFrame big;
  big.gpu_instance_id = 1;
  big.profile = "3g.40gb";
  big.memory_used_mib = 10240;
  big.memory_total_mib = 40960;
  big.sm_active = 62;
  big.tensor_active = 45;
  big.pod = "ml/trainer-0";
  MigInstanceFrame small;
  small.gpu_instance_id = 13;
  small.profile = "1g.10gb";
  small.memory_used_mib = 0;
  small.memory_total_mib = 10240;
  g0.mig_instances = {big, small};
  g0.processes = {top_mig_process(100, 0, 13, 8ull << 30), top_mig_process(101, 0, 1, 1ull << 30),
                  top_mig_process(102, 0, 1, 4ull << 30)};
  GpuFrame g1;
  g1.index = 1;
  g1.name = "NVIDIA H100 80GB HBM3";
  g1.processes = {top_mig_process(200, 1, std::nullopt, 2ull << 30)};
  Frame f;
  f.host = "node-1";
  f.gpus = {g0, g1};
  return f;
}

std::string top_mig_draw(const TopModel& model, int w, int h) {
  SourceView s;
  s.source = "NVML";
  s.age_seconds = 0.5;
  ScreenBuffer buffer(w, h);
  draw_screen(model, {}, s, buffer);
  return buffer.text();
}

std::vector<unsigned> top_mig_pids(const std::vector<ProcessRow>& rows) {
  std::vector<unsigned> out;
  for (const auto& r : rows) out.push_back(r.pid);
  return out;
}

TEST(TopMig, InstanceRowsUnderTheGpuShowProfileIdMemoryActivityProcessesAndPod) {
  TopModel model;
  model.apply(top_mig_frame());
  const std::string text = top_mig_draw(model, 200, 50);
  EXPECT_NE(text.find("├ 0/1   3g.40gb    SM 62% TC 45% mem  10.0/40.0G  2 procs  ml/trainer-0"), std::string::npos)
      << text;
  EXPECT_NE(text.find("└ 0/13  1g.10gb    SM N/A TC N/A mem   0.0/10.0G  1 proc"), std::string::npos) << text;
  // The process table names a MIG process's instance, a plain GPU's process its GPU.
  EXPECT_NE(text.find("    102  alice       0/1   4096MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("    200  alice         1   2048MiB"), std::string::npos) << text;
}

TEST(TopMig, InstanceRowsAreDrawnInTheCompactAndOneLineLayoutsToo) {
  TopModel model;
  model.apply(top_mig_frame());
  for (int h : {16, 13}) {
    const std::string text = top_mig_draw(model, 80, h);
    EXPECT_NE(text.find("├ 0/1"), std::string::npos) << h << "\n" << text;
    EXPECT_NE(text.find("PID"), std::string::npos) << h << "\n" << text;
  }
}

TEST(TopMig, FocusedMigGpuGroupsItsProcessesByInstance) {
  TopModel model;
  model.apply(top_mig_frame());
  // By memory over every GPU: 8, 4, 2, 1 GiB.
  EXPECT_EQ(top_mig_pids(model.process_rows()), (std::vector<unsigned>{100, 102, 200, 101}));
  model.toggle_focus();
  // GPU 0 only, instance 1's (4, 1 GiB) before instance 13's.
  EXPECT_EQ(top_mig_pids(model.process_rows()), (std::vector<unsigned>{102, 101, 100}));
  const std::string text = top_mig_draw(model, 120, 40);
  EXPECT_NE(text.find("└ 0/13  1g.10gb"), std::string::npos) << text;
}

TEST(TopMig, ManyMigGpusStillKeepTheSelectedGpuAndTheProcessTableInView) {
  Frame f = top_mig_frame();
  const GpuFrame mig = f.gpus[0];
  f.gpus.clear();
  for (unsigned i = 0; i < 8; ++i) {
    f.gpus.push_back(mig);
    f.gpus.back().index = i;
  }
  TopModel model;
  model.apply(f);
  model.select_index(7);
  for (int w : {60, 80, 200}) {
    for (int h : {12, 24, 50}) {
      const std::string text = top_mig_draw(model, w, h);
      EXPECT_NE(text.find("▶"), std::string::npos) << w << "x" << h << "\n" << text;
      EXPECT_NE(text.find("PID"), std::string::npos) << w << "x" << h << "\n" << text;
    }
  }
}

TEST(TopMig, LocalFrameCarriesInstancesAndEachProcesssInstance) {
  model::Snapshot snapshot;
  snapshot.time = testing::sample_time();
  auto mig = testing::h100_mig_sample(0);
  model::ProcessSample p;
  p.pid = 4242;
  p.gpu_instance_id = 13;
  p.compute_instance_id = 0;
  mig.processes.push_back(p);
  snapshot.gpus = {mig, testing::h100_sample(1)};
  const std::vector<model::GpuInfo> infos{testing::h100_mig_info(0), testing::h100_info(1)};
  const Frame f = LocalReader::frame_of(snapshot, infos, testing::sample_system(), {});
  ASSERT_EQ(f.gpus.size(), 2u);
  ASSERT_EQ(f.gpus[0].mig_instances.size(), 2u);
  const auto& a = f.gpus[0].mig_instances[0];
  EXPECT_EQ(a.gpu_instance_id, 1u);
  EXPECT_EQ(a.profile, "3g.40gb");
  EXPECT_EQ(a.uuid, "MIG-11111111-aaaa-5bbb-8ccc-000000000001");
  EXPECT_EQ(a.memory_used_mib, 10240);
  EXPECT_EQ(a.memory_total_mib, 40192);
  ASSERT_TRUE(a.sm_active && a.tensor_active);
  EXPECT_DOUBLE_EQ(*a.sm_active, 62);
  EXPECT_DOUBLE_EQ(*a.tensor_active, 45);
  EXPECT_EQ(a.pod, "ml/trainer-0");
  const auto& b = f.gpus[0].mig_instances[1];
  EXPECT_EQ(b.gpu_instance_id, 13u);
  EXPECT_FALSE(b.sm_active.has_value());
  EXPECT_EQ(b.pod, "");
  ASSERT_EQ(f.gpus[0].processes.size(), 1u);
  EXPECT_EQ(f.gpus[0].processes[0].gpu_instance_id, 13u);
  EXPECT_TRUE(f.gpus[1].mig_instances.empty());
}

TEST(TopMig, AnInstancesVerdictGoesOnItsRowNeverOnItsGpus) {
  Frame f = top_mig_frame();
  analysis::Diagnosis diagnosis;
  analysis::GpuDiagnosis whole;
  whole.identity.gpu = "0";
  whole.verdict = analysis::Verdict::kComputeBound;
  analysis::GpuDiagnosis idle_instance;  // last, as the agent lists instances after their GPU
  idle_instance.identity.gpu = "0";
  idle_instance.identity.labels = store::Labels{{"gpu", "0"}, {"GPU_I_ID", "13"}};
  idle_instance.verdict = analysis::Verdict::kIdle;
  diagnosis.gpus = {whole, idle_instance};
  LocalReader::attach_verdicts(f, diagnosis);
  ASSERT_TRUE(f.gpus[0].verdict.has_value());
  EXPECT_EQ(f.gpus[0].verdict->id, "compute_bound");
  EXPECT_FALSE(f.gpus[0].mig_instances[0].verdict.has_value());
  ASSERT_TRUE(f.gpus[0].mig_instances[1].verdict.has_value());
  EXPECT_EQ(f.gpus[0].mig_instances[1].verdict->id, "idle");
  EXPECT_FALSE(f.gpus[1].verdict.has_value());
  TopModel model;
  model.apply(f);
  const std::string text = top_mig_draw(model, 200, 50);
  EXPECT_NE(text.find("└ 0/13  1g.10gb    SM N/A TC N/A mem   0.0/10.0G  1 proc  idle"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuscope::top

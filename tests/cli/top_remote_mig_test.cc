// `gpuscope top --url` on an agent with a GPU in MIG mode: the frame read from the agent's /api/v1/gpus
// and /api/v1/diagnosis holds the same GPU instance rows, process instances and per-instance verdicts as
// the frame the local top builds from the same reading, so both screens are the same.
#include <gtest/gtest.h>

#include <thread>

#include "analysis/diagnosis_report.h"
#include "export/sample_mig_gpus.h"
#include "http/agent_routes.h"
#include "top/local_reader.h"
#include "top/remote_reader.h"
#include "top/screen_buffer.h"
#include "top/top_model.h"
#include "top/top_screen.h"

namespace gpuscope::top {
namespace {

using namespace std::chrono_literals;

// GPU 0 in MIG mode: the 3g.40gb (GPU instance 1) split into two compute instances (two MIG devices, one
// row), a process in each, and the idle 1g.10gb; GPU 1 a whole GPU with a process.
model::Snapshot top_remote_mig_snapshot() {
  model::Snapshot s;
  s.time = testing::sample_time();
  s.gpus = {testing::h100_mig_sample(0), testing::h100_sample(1)};
  auto& g0 = s.gpus[0];
  auto second = g0.mig_instances[0];
  second.device_index = 2;
  second.compute_instance_id = 1;
  second.uuid = "MIG-11111111-aaaa-5bbb-8ccc-000000000003";
  second.kubernetes_pod = model::KubernetesPod{"eval-1", "ml", "eval"};
  g0.mig_instances.push_back(second);
  const auto process = [](unsigned pid, std::optional<unsigned> gi, std::optional<unsigned> ci, std::uint64_t mib) {
    model::ProcessSample p;
    p.pid = pid;
    p.identity.name = "python train" + std::to_string(pid) + ".py";
    p.used_memory_bytes = mib << 20;
    p.gpu_instance_id = gi;
    p.compute_instance_id = ci;
    return p;
  };
  g0.processes = {process(100, 1, 0, 4096), process(101, 1, 1, 1024), process(102, 13, 0, 512)};
  s.gpus[1].processes = {process(200, std::nullopt, std::nullopt, 2048)};
  return s;
}

std::vector<model::GpuInfo> top_remote_mig_infos() { return {testing::h100_mig_info(0), testing::h100_info(1)}; }

// The GPU compute bound, its 1g.10gb idle, the 3g.40gb input starved: the verdicts the agent's diagnosis
// gives, with its instances' GPU_I_ID labels.
analysis::Diagnosis top_remote_mig_diagnosis() {
  const auto verdict = [](std::string gpu, std::string uuid, std::string gi, analysis::Verdict v) {
    analysis::GpuDiagnosis d;
    d.identity.gpu = gpu;
    d.identity.uuid = uuid;
    std::vector<store::Label> labels{{"gpu", gpu}};
    if (!gi.empty()) labels.push_back({"GPU_I_ID", gi});
    d.identity.labels = store::Labels(std::move(labels));
    d.verdict = v;
    d.summary = "because";
    return d;
  };
  const std::string uuid0 = testing::h100_info(0).uuid;
  analysis::Diagnosis d;
  d.gpus = {verdict("0", uuid0, "", analysis::Verdict::kComputeBound),
            verdict("0", uuid0, "1", analysis::Verdict::kInputStarved),
            verdict("0", uuid0, "13", analysis::Verdict::kIdle)};
  return d;
}

std::string top_remote_mig_draw(const Frame& f) {
  TopModel model;
  model.apply(f);
  SourceView s;
  s.source = "test";
  s.age_seconds = 0.5;
  ScreenBuffer buffer(200, 50);
  draw_screen(model, {}, s, buffer);
  return buffer.text();
}

TEST(TopRemoteMig, TheAgentsApiGivesTheFrameAndScreenTheLocalTopBuildsFromTheSameReading) {
  const model::Snapshot snapshot = top_remote_mig_snapshot();
  sampler::Sampler sampler{[&] { return snapshot; }, 100ms};
  http::AgentRoutes routes{sampler, top_remote_mig_infos(), testing::sample_system(), {}, "test"};
  sampler.start();
  ASSERT_NE(sampler.wait_for(1, 2s), nullptr);
  const auto res = routes.handle(http::HttpRequest("GET", "/api/v1/gpus"));
  ASSERT_EQ(res.status, 200);
  const auto diagnosis = top_remote_mig_diagnosis();
  const std::string diagnosis_body = nlohmann::json{{"status", "success"}, {"data", analysis::diagnosis_json(diagnosis)}}.dump();

  auto remote = RemoteReader::frame_of(res.content(), diagnosis_body, {});
  ASSERT_TRUE(remote) << remote.error();
  Frame local = LocalReader::frame_of(snapshot, top_remote_mig_infos(), testing::sample_system(), {});
  LocalReader::attach_verdicts(local, diagnosis);

  ASSERT_EQ(remote->gpus.size(), local.gpus.size());
  // One row per GPU instance (the 3g.40gb's two compute instances are one row), as the local top.
  ASSERT_EQ(remote->gpus[0].mig_instances.size(), 2u);
  for (std::size_t i = 0; i < local.gpus[0].mig_instances.size(); ++i) {
    const auto& r = remote->gpus[0].mig_instances[i];
    const auto& l = local.gpus[0].mig_instances[i];
    EXPECT_EQ(r.gpu_instance_id, l.gpu_instance_id) << i;
    EXPECT_EQ(r.profile, l.profile) << i;
    EXPECT_EQ(r.uuid, l.uuid) << i;
    EXPECT_EQ(r.memory_used_mib, l.memory_used_mib) << i;
    EXPECT_EQ(r.memory_total_mib, l.memory_total_mib) << i;
    EXPECT_EQ(r.sm_active, l.sm_active) << i;
    EXPECT_EQ(r.tensor_active, l.tensor_active) << i;
    EXPECT_EQ(r.pod, l.pod) << i;
    ASSERT_TRUE(r.verdict && l.verdict) << i;
    EXPECT_EQ(r.verdict->id, l.verdict->id) << i;
  }
  EXPECT_EQ(remote->gpus[0].mig_instances[0].verdict->id, "input_starved");
  // The GPU keeps its own verdict, not its last instance's.
  ASSERT_TRUE(remote->gpus[0].verdict.has_value());
  EXPECT_EQ(remote->gpus[0].verdict->id, "compute_bound");
  EXPECT_TRUE(remote->gpus[1].mig_instances.empty());
  for (std::size_t g = 0; g < 2; ++g) {
    ASSERT_EQ(remote->gpus[g].processes.size(), local.gpus[g].processes.size());
    for (std::size_t i = 0; i < local.gpus[g].processes.size(); ++i) {
      EXPECT_EQ(remote->gpus[g].processes[i].pid, local.gpus[g].processes[i].pid);
      EXPECT_EQ(remote->gpus[g].processes[i].gpu_instance_id, local.gpus[g].processes[i].gpu_instance_id) << g << "/" << i;
    }
  }
  EXPECT_EQ(remote->gpus[0].processes[1].gpu_instance_id, 1u);
  EXPECT_FALSE(remote->gpus[1].processes[0].gpu_instance_id.has_value());

  const std::string remote_screen = top_remote_mig_draw(*remote);
  EXPECT_EQ(remote_screen, top_remote_mig_draw(local));
  EXPECT_NE(remote_screen.find("├ 0/1   3g.40gb    SM 62% TC 45%"), std::string::npos) << remote_screen;
  EXPECT_NE(remote_screen.find("└ 0/13  1g.10gb    SM N/A TC N/A"), std::string::npos) << remote_screen;
}

TEST(TopRemoteMig, MigDevicesOfAGpuOutOfMigModeAreNotShown) {
  // An agent answer whose GPU says MIG is off: any instance list left in it is not drawn.
  const std::string body =
      R"({"system":{"hostname":"n"},"gpus":[{"index":0,"uuid":"GPU-x","up":true,"values":{},"mig_enabled":false,)"
      R"("mig_instances":[{"gpu_instance_id":1,"profile":"3g.40gb","values":{}}]}]})";
  auto f = RemoteReader::frame_of(body, "", {});
  ASSERT_TRUE(f) << f.error();
  EXPECT_TRUE(f->gpus[0].mig_instances.empty());
}

}  // namespace
}  // namespace gpuscope::top

// The cost of a /metrics scrape for 8 simulated H100s: rendering the GPU families from a snapshot (once
// per reading), a whole scrape answered from the cached GPU part (what every further scrape of the
// same reading costs), and the same compressed with gzip.
#include <benchmark/benchmark.h>

#include <chrono>
#include <sstream>

#include "export/gpu_metrics.h"
#include "http/agent_routes.h"
#include "http/gzip.h"
#include "nvml/nvml_backend.h"
#include "sampler/sampler.h"

namespace {

using namespace gpuscope;

std::unique_ptr<nvml::NvmlBackend> open_sim() {
  nvml::BackendOptions o;
  o.simulate = true;
  o.library_path = GPUSCOPE_SIM_LIB;
  o.watch_events = true;
  auto backend = nvml::NvmlBackend::open(o);
  return backend ? std::move(*backend) : nullptr;
}

void BM_RenderGpuMetrics(benchmark::State& state) {
  auto backend = open_sim();
  if (!backend) {
    state.SkipWithError("simulator did not load");
    return;
  }
  const auto snap = backend->sample();
  const auto set = exporter::default_metric_set();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    out.reserve(96 * 1024);
    exporter::ExpositionWriter w(exporter::ExpositionFormat::kPrometheusText, out);
    exporter::write_gpu_metrics(w, snap, backend->gpus(), backend->system(), set, {});
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderGpuMetrics)->Unit(benchmark::kMicrosecond);

// The agent's parts a scrape touches, with one reading published (the sampler then waits a minute).
struct Agent {
  std::unique_ptr<nvml::NvmlBackend> backend = open_sim();
  std::unique_ptr<sampler::Sampler> sampler;
  std::unique_ptr<http::AgentRoutes> routes;
  Agent() {
    if (!backend) return;
    sampler = std::make_unique<sampler::Sampler>([this] { return backend->sample(); }, std::chrono::seconds(60));
    sampler->start();
    sampler->wait_for(1, std::chrono::seconds(10));
    routes = std::make_unique<http::AgentRoutes>(*sampler, backend->gpus(), backend->system(),
                                                 exporter::GpuMetricsOptions{}, "bench");
  }
  ~Agent() {
    if (sampler) sampler->stop();
  }
};

// A scrape answered from the shared body (scrapes within AgentRoutes::kBodyReuse of each other).
void BM_ScrapeCached(benchmark::State& state) {
  Agent agent;
  if (!agent.routes) {
    state.SkipWithError("simulator did not load");
    return;
  }
  auto& routes = *agent.routes;
  const bool gzip = state.range(0) != 0;
  std::vector<std::pair<std::string, std::string>> headers;
  if (gzip) headers.emplace_back("Accept-Encoding", "gzip");
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto r = routes.handle(http::HttpRequest("GET", "/metrics", headers));
    bytes = r.content().size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ScrapeCached)->Arg(0)->Arg(1)->ArgName("gzip")->Unit(benchmark::kMicrosecond);

// What a scrape costs when nothing is cached: the whole body (GPU part from the per-reading cache, the
// agent's own series and /proc/self read fresh), then gzip of it.
void BM_ScrapeUncached(benchmark::State& state) {
  Agent agent;
  if (!agent.routes) {
    state.SkipWithError("simulator did not load");
    return;
  }
  auto& routes = *agent.routes;
  const bool gzip = state.range(0) != 0;
  for (auto _ : state) {
    auto body = routes.render_metrics(exporter::ExpositionFormat::kPrometheusText);
    if (gzip) body = http::gzip_compress(body);
    benchmark::DoNotOptimize(body);
  }
}
BENCHMARK(BM_ScrapeUncached)->Arg(0)->Arg(1)->ArgName("gzip")->Unit(benchmark::kMicrosecond);

}  // namespace

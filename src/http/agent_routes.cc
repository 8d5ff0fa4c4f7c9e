#include "http/agent_routes.h"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "export/agent_metrics.h"
#include "export/gpu_info_report.h"
#include "export/machine_value.h"
#include "http/gzip.h"
#include "http/process_usage.h"

namespace gpuscope::http {
namespace {

HttpResponse text_response(int status, std::string body) {
  return {status, "text/plain; charset=utf-8", std::move(body), {}, nullptr};
}

// A GPU's MIG devices for /api/v1/gpus, in index order: identity, the values a MIG device has of its own
// (memory, GPM's ratios; keys as the GPU's "values", absent while unknown) and its container.
nlohmann::ordered_json agent_routes_mig_json(const model::GpuSample& sample) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& m : sample.mig_instances) {
    nlohmann::ordered_json j{{"device_index", m.device_index},
                             {"gpu_instance_id", m.gpu_instance_id},
                             {"compute_instance_id", m.compute_instance_id},
                             {"profile", m.profile},
                             {"uuid", m.uuid}};
    if (m.sm_count) j["sm_count"] = *m.sm_count;
    if (m.gpu_instance_slices) j["slices"] = *m.gpu_instance_slices;
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (const auto& f : model::FieldCatalog::all()) {
      if (model::is_mig_instance_field(f.id) && m[f.id].valid()) values[std::string(f.key)] = m[f.id].value;
    }
    j["values"] = std::move(values);
    if (m.kubernetes_pod) {
      j["pod"] = m.kubernetes_pod->pod;
      j["namespace"] = m.kubernetes_pod->namespace_name;
      j["container"] = m.kubernetes_pod->container;
      if (m.kubernetes_shared) j["kubernetes_shared"] = true;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

AgentRoutes::AgentRoutes(const sampler::Sampler& sampler, std::vector<model::GpuInfo> gpus, model::SystemInfo system,
                         exporter::GpuMetricsOptions options, std::string version, const model::Clock& clock)
    : sampler_(sampler),
      clock_(clock),
      gpus_(std::move(gpus)),
      system_(std::move(system)),
      version_(std::move(version)) {
  set_.store(std::make_shared<const exporter::MetricSet>(exporter::default_metric_set()));
  set_options(std::move(options));
  reload_time_.store(std::chrono::duration<double>(clock_.wall().time_since_epoch()).count());
}

void AgentRoutes::set_metric_set(std::shared_ptr<const exporter::MetricSet> set) {
  set_.store(std::move(set));
  reload_ok_.store(true);
  reload_time_.store(std::chrono::duration<double>(clock_.wall().time_since_epoch()).count());
  config_generation_.fetch_add(1);
}

void AgentRoutes::reload_failed() {
  reload_ok_.store(false);
  config_generation_.fetch_add(1);
}

HttpResponse AgentRoutes::handle(const HttpRequest& request) {
  const auto path = request.path();
  const bool known = path == "/metrics" || path == "/healthz" || path == "/health" || path == "/api/v1/gpus";
  if (!known) return text_response(404, fmt::format("404 not found: {} (see / for the dashboard and the endpoints)\n", path));
  if (request.method() != "GET" && request.method() != "HEAD") {
    auto r = text_response(405, fmt::format("405 method {} not allowed on {} (GET or HEAD)\n", request.method(), path));
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  if (path == "/metrics") return metrics(request);
  if (path == "/healthz" || path == "/health") return health();
  return gpus_json();
}

std::shared_ptr<const std::string> AgentRoutes::gpu_text(const std::shared_ptr<const sampler::Publication>& pub,
                                                         const std::shared_ptr<const exporter::MetricSet>& set,
                                                         exporter::ExpositionFormat format) {
  std::lock_guard lock(cache_mu_);
  auto& entry = cache_[format == exporter::ExpositionFormat::kOpenMetrics ? 1 : 0];
  if (entry.text && entry.pub == pub && entry.set == set) return entry.text;
  auto text = std::make_shared<std::string>();
  if (pub) {
    text->reserve(entry.text ? entry.text->size() + 1024 : 64 * 1024);
    exporter::ExpositionWriter writer(format, *text);
    const auto options = options_.load();
    exporter::write_gpu_metrics(writer, pub->snapshot, gpus_, system_, *set, *options);
    // The counters change with the readings, so they are rendered (and shared) with them.
    if (cost_counters_) exporter::write_cost_metrics(writer, cost_counters_(), gpus_, system_, *set, *options);
  }
  entry = {pub, set, text};
  return text;
}

exporter::AgentStatus AgentRoutes::agent_status() const {
  const auto pub = sampler_.latest();
  exporter::AgentStatus status;
  if (pub) {
    status.sample_age_seconds = std::chrono::duration<double>(clock_.steady() - pub->started).count();
    status.sample_duration_seconds = std::chrono::duration<double>(pub->finished - pub->started).count();
    status.collectors = exporter::collector_results(pub->snapshot);
    status.nvml_calls = pub->snapshot.nvml_calls;
  }
  status.interval_seconds = std::chrono::duration<double>(sampler_.interval()).count();
  const auto stats = sampler_.stats();
  status.samples_total = stats.samples_total;
  status.overruns_total = stats.overruns_total;
  status.config_reload_success = reload_ok_.load();
  status.config_reload_timestamp_seconds = reload_time_.load();
  status.version = version_;
  status.process = read_process_usage();
  if (extension_) extension_(status);
  return status;
}

std::string AgentRoutes::render_metrics(exporter::ExpositionFormat format) {
  const auto pub = sampler_.latest();
  const auto set = set_.load();
  const auto gpu = gpu_text(pub, set, format);

  const exporter::AgentStatus status = agent_status();

  std::string body;
  body.reserve(gpu->size() + 4096);
  body.append(*gpu);
  exporter::ExpositionWriter writer(format, body);
  if (extra_families_) extra_families_(writer);
  exporter::write_agent_metrics(writer, status);
  writer.finish();
  return body;
}

HttpResponse AgentRoutes::metrics(const HttpRequest& request) {
  const auto format = exporter::negotiate_format(request.header("Accept").value_or(""));
  const bool gzip = accepts_gzip(request.header("Accept-Encoding").value_or(""));
  HttpResponse r;
  r.content_type = format == exporter::ExpositionFormat::kOpenMetrics ? exporter::kOpenMetricsContentType
                                                                      : exporter::kPrometheusTextContentType;
  r.headers.emplace_back("Vary", "Accept-Encoding, Accept");
  if (gzip) r.headers.emplace_back("Content-Encoding", "gzip");

  const auto pub = sampler_.latest();
  const auto set = set_.load();
  const auto generation = config_generation_.load();
  // Body reuse bounds the work of many scrapers, a matter of real time: on a virtual clock that stands
  // still the agent's own series would never be rendered again.
  const auto now = std::chrono::steady_clock::now();
  auto& entry = body_[format == exporter::ExpositionFormat::kOpenMetrics ? 1 : 0];
  std::shared_ptr<const std::string> text, compressed;
  {
    std::lock_guard lock(body_mu_);
    if (entry.text && entry.pub == pub && entry.set == set && entry.generation == generation &&
        now - entry.built < kBodyReuse) {
      text = entry.text;
      compressed = entry.gzip;
    }
  }
  // Rendering and compressing happen outside the lock, so scrapes served from the shared body never
  // wait behind the one that renders it anew.
  if (!text) {
    text = std::make_shared<const std::string>(render_metrics(format));
    std::lock_guard lock(body_mu_);
    entry = {pub, set, generation, now, text, nullptr};
  }
  if (gzip && !compressed) {
    compressed = std::make_shared<const std::string>(gzip_compress(*text));
    std::lock_guard lock(body_mu_);
    if (entry.text == text) entry.gzip = compressed;
  }
  r.shared_body = gzip ? compressed : text;
  return r;
}

HttpResponse AgentRoutes::health() const {
  const auto pub = sampler_.latest();
  if (!pub) return text_response(503, "no GPU reading yet\n");
  const double age = std::chrono::duration<double>(clock_.steady() - pub->started).count();
  const double interval = std::chrono::duration<double>(sampler_.interval()).count();
  // Three missed readings (and at least 10 s): the driver is hung or the sampler is stuck.
  const double limit = std::max(3 * interval, 10.0);
  if (age > limit) {
    return text_response(503, fmt::format("stale: the latest GPU reading started {:.1f} s ago (limit {:.1f} s); "
                                          "an NVML call may be hung\n", age, limit));
  }
  return text_response(200, "OK\n");
}

HttpResponse AgentRoutes::gpus_json() const {
  const auto pub = sampler_.latest();
  auto doc = exporter::gpu_info_json(system_, gpus_.size(), gpus_);
  if (pub) {
    doc["sample"] = {
        {"time_seconds", std::chrono::duration<double>(pub->snapshot.time.time_since_epoch()).count()},
        {"age_seconds", std::chrono::duration<double>(clock_.steady() - pub->started).count()},
        {"duration_seconds", std::chrono::duration<double>(pub->finished - pub->started).count()},
    };
  }
  for (auto& g : doc["gpus"]) {
    const unsigned index = g.value("index", 0u);
    const model::GpuSample* sample = nullptr;
    if (pub) {
      for (const auto& s : pub->snapshot.gpus) {
        if (s.index == index) sample = &s;
      }
    }
    g["up"] = sample != nullptr && sample->up;
    if (sample == nullptr || !sample->up) continue;
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (const auto& f : model::FieldCatalog::all()) {
      if ((*sample)[f.id].valid()) values[std::string(f.key)] = (*sample)[f.id].value;
    }
    g["values"] = std::move(values);
    nlohmann::ordered_json procs = nlohmann::ordered_json::array();
    for (const auto& p : sample->processes) {
      nlohmann::ordered_json j{{"pid", p.pid}, {"name", p.identity.name}};
      if (!p.identity.user.empty()) j["user"] = p.identity.user;
      if (p.used_memory_bytes) j["used_memory_bytes"] = *p.used_memory_bytes;
      if (p.sm_util_percent) j["sm_utilization_ratio"] = *p.sm_util_percent / 100.0;
      if (p.mem_util_percent) j["memory_utilization_ratio"] = *p.mem_util_percent / 100.0;
      if (!p.identity.container_id.empty()) j["container_id"] = p.identity.container_id;
      if (!p.identity.pod_uid.empty()) j["pod_uid"] = p.identity.pod_uid;
      if (sample->mig_enabled && p.gpu_instance_id) {
        j["gpu_instance_id"] = *p.gpu_instance_id;
        if (p.compute_instance_id) j["compute_instance_id"] = *p.compute_instance_id;
      }
      procs.push_back(std::move(j));
    }
    g["processes"] = std::move(procs);
    // MIG mode as of this reading (the inventory's is discovery's), and the MIG devices in it.
    if (g.contains("mig_enabled") || sample->mig_enabled) g["mig_enabled"] = sample->mig_enabled;
    if (sample->mig_enabled) g["mig_instances"] = agent_routes_mig_json(*sample);
    if (!sample->events.xid_by_code.empty()) {
      nlohmann::ordered_json xids = nlohmann::ordered_json::object();
      for (const auto& [code, n] : sample->events.xid_by_code) xids[std::to_string(code)] = n;
      g["xid_counts"] = std::move(xids);
    }
  }
  return {200, "application/json", exporter::json_line(doc) + "\n", {}, nullptr};
}

}  // namespace gpuscope::http

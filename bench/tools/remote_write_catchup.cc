// bench/remote_write_catchup.sh's driver: an hour (--minutes) of 8 GPUs' history (--gpus, --series-per-gpu
// series each, one reading a second) written into a fresh store, a remote-write cursor set to its start
// as after an outage of that length, and the agent's RemoteWriter run until caught up against --url.
// Prints the catch-up time and samples/s, and the encoding alone (protobuf + snappy) in samples/s.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <thread>

#include "log/logger.h"
#include "model/clock.h"
#include "remote_write/remote_writer.h"
#include "remote_write/write_request.h"
#include "store/tsdb.h"

using namespace gpuscope;

int main(int argc, char** argv) {
  CLI::App app("remote-write catch-up benchmark");
  std::string url, data_dir;
  int gpus = 8, series_per_gpu = 75, minutes = 60;
  std::size_t per_send = 2000;
  app.add_option("--url", url, "the receiver")->required();
  app.add_option("--data-dir", data_dir, "a scratch directory for the store")->required();
  app.add_option("--gpus", gpus);
  app.add_option("--series-per-gpu", series_per_gpu);
  app.add_option("--minutes", minutes);
  app.add_option("--max-samples-per-send", per_send);
  CLI11_PARSE(app, argc, argv);

  const model::Clock& clock = model::system_clock();
  const std::int64_t now = clock.unix_ms();
  const std::int64_t from = (now - static_cast<std::int64_t>(minutes) * 60'000) / 1000 * 1000;
  store::TsdbOptions so;
  so.data_dir = data_dir;
  auto tsdb = store::Tsdb::open(so, now);
  if (!tsdb) {
    std::cerr << tsdb.error() << "\n";
    return 1;
  }
  std::vector<store::Labels> series;
  for (int g = 0; g < gpus; ++g) {
    for (int s = 0; s < series_per_gpu; ++s) {
      series.push_back(store::Labels{{"__name__", fmt::format("DCGM_FI_BENCH_FIELD_{}", s)},
                                     {"gpu", std::to_string(g)},
                                     {"UUID", fmt::format("GPU-{:08x}-bench-{:04d}", g * 7919, g)},
                                     {"pci_bus_id", fmt::format("00000000:{:02X}:00.0", 0x18 + g)},
                                     {"device", fmt::format("nvidia{}", g)},
                                     {"modelName", "NVIDIA H100 80GB HBM3"},
                                     {"Hostname", "bench-node"}});
    }
  }
  std::size_t written = 0;
  const auto write_start = std::chrono::steady_clock::now();
  for (std::int64_t t = from; t < now - 3000; t += 1000) {
    for (std::size_t i = 0; i < series.size(); ++i) {
      // Gauges that wander and counters that climb, as readings do.
      const double v = i % 3 == 0 ? static_cast<double>((t - from) / 1000) * 250.0
                                  : 50 + 40 * std::sin(static_cast<double>(t) / 60'000.0 + static_cast<double>(i));
      if ((*tsdb)->append(series[i], t, v)) ++written;
    }
  }
  if (auto flushed = (*tsdb)->flush(clock.unix_ms()); !flushed) std::cerr << "flush: " << flushed.error() << "\n";
  const double write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - write_start).count();

  auto receiver = remote_write::receiver_from_url(url);
  if (!receiver) {
    std::cerr << receiver.error() << "\n";
    return 2;
  }
  receiver->queue.max_samples_per_send = per_send;
  // The cursor of an agent whose receiver went away `minutes` ago.
  remote_write::SendCursor(data_dir, receiver->url, receiver->display_url).save(from - 1);

  // Encoding alone: one read window's batches, protobuf + snappy, no network.
  {
    auto all = store::LabelMatcher::make(store::LabelMatcher::Op::kRegex, "__name__", ".+");
    auto window = (*tsdb)->select(std::span(&*all, 1), from, from + 59'999);
    const auto batches = remote_write::plan_batches(*window, from + 59'999, per_send);
    std::size_t samples = 0, bytes = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int round = 0; round < 5; ++round) {
      for (const auto& b : batches) {
        bytes += remote_write::encode_batch(*window, b).size();
        samples += b.samples.size();
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("encode: {} samples in {:.3f} s = {:.0f} samples/s, {:.1f} bytes/sample compressed\n", samples, s,
               static_cast<double>(samples) / s, static_cast<double>(bytes) / static_cast<double>(samples));
  }

  log::Logger log(std::cerr, log::Level::kWarn);
  remote_write::RemoteWriterOptions o;
  o.receiver = *receiver;
  o.data_dir = data_dir;
  o.settle = std::chrono::milliseconds(2000);
  remote_write::RemoteWriter writer(o, **tsdb, nullptr, clock, log);
  writer.set_transport(remote_write::make_curl_transport(*receiver, "gpuscope/bench", writer.abort_flag()));
  writer.init();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const auto r = writer.step();
    if (r.step == remote_write::RemoteWriter::Step::kIdle && r.wait.count() > 0) break;
    if (r.step == remote_write::RemoteWriter::Step::kRetry) std::this_thread::sleep_for(r.wait);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto stats = writer.stats();
  std::uint64_t requests = 0;
  for (const auto& [code, n] : stats.requests) requests += n;
  fmt::print("history: {} series, {} samples over {} min written in {:.1f} s\n", series.size(), written, minutes, write_s);
  fmt::print("catch-up: {} samples sent ({} failed) in {} requests, {:.2f} s = {:.0f} samples/s\n", stats.samples_sent,
             stats.samples_failed, requests, s, static_cast<double>(stats.samples_sent) / s);
  return stats.samples_sent == written ? 0 : 3;
}

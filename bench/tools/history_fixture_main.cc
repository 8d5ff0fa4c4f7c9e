// history_fixture: the data and the result check of bench/query_range_vs_prometheus.sh.
//   history_fixture write --out DIR [--interval-ms 15000] [--hours 25.5] [--end-ms MS] [--gpus 8]
//     writes DIR/data (a gpuscope data dir) and DIR/history.om (OpenMetrics for promtool), same samples,
//     and prints key=value lines (first_ms, last_ms, series, samples, bytes and costs).
//   history_fixture compare LEFT.json RIGHT.json [--rel 1e-6] [--abs 1e-9]
//     exit 0 when two query_range responses agree, 1 when they differ, 2 on a bad input.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tools/history_fixture.h"
#include "tools/query_result_diff.h"

namespace {

using namespace gpuscope::bench;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int write_fixture(const std::filesystem::path& out, std::int64_t interval_ms, double hours, std::int64_t end_ms,
                  unsigned gpus, std::uint64_t seed, bool openmetrics) {
  std::error_code ec;
  if (std::filesystem::exists(out / "data", ec)) {
    fmt::print(stderr, "history_fixture: {} exists; give an empty --out\n", (out / "data").string());
    return 2;
  }
  std::filesystem::create_directories(out, ec);
  if (end_ms == 0) {
    // Ten minutes ago, so an agent started now adds its own readings only after the fixture's end.
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    end_ms = now_ms - 10 * 60 * 1000;
  }
  end_ms -= end_ms % interval_ms;  // readings on the interval's grid, as the sampler stamps them
  HistoryFixtureOptions o;
  o.interval_ms = interval_ms;
  o.readings = static_cast<std::size_t>(std::llround(hours * 3600'000.0 / static_cast<double>(interval_ms))) + 1;
  o.first_ms = end_ms - static_cast<std::int64_t>(o.readings - 1) * interval_ms;
  o.gpus = gpus;
  o.seed = seed;

  auto t0 = Clock::now();
  const auto fixture = HistoryFixture::generate(o);
  const double generate_s = seconds_since(t0);
  t0 = Clock::now();
  const auto stats = fixture.write_tsdb(out / "data");
  const double tsdb_s = seconds_since(t0);
  if (!stats) {
    fmt::print(stderr, "history_fixture: store: {}\n", stats.error());
    return 1;
  }
  t0 = Clock::now();
  // 30 days for bench/cost_report.sh would be ~4 GB of OpenMetrics nobody reads: --no-openmetrics.
  const auto om_bytes = openmetrics ? fixture.write_openmetrics(out / "history.om") : std::expected<std::uint64_t, std::string>(0);
  const double om_s = seconds_since(t0);
  if (!om_bytes) {
    fmt::print(stderr, "history_fixture: {}\n", om_bytes.error());
    return 1;
  }
  const auto samples = static_cast<double>(fixture.samples());
  fmt::print("first_ms={}\nlast_ms={}\ninterval_ms={}\nseries={}\nsamples={}\n", o.first_ms, fixture.last_ms(),
             interval_ms, fixture.series().size(), fixture.samples());
  fmt::print("generate_s={:.2f}\n", generate_s);
  // Through append_reading + hourly flushes + the final flush: the agent's write path, SQLite included.
  fmt::print("tsdb_write_s={:.2f}\ntsdb_write_ns_per_sample={:.1f}\n", tsdb_s, tsdb_s * 1e9 / samples);
  // After the store closed: SQLite checkpointed its write-ahead log into the file and removed it.
  std::uint64_t file_bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(out / "data", ec)) {
    if (e.is_regular_file(ec)) file_bytes += e.file_size(ec);
  }
  fmt::print("tsdb_disk_bytes_open={}\ntsdb_file_bytes={}\ntsdb_file_bytes_per_sample={:.3f}\n", stats->disk_bytes,
             file_bytes, static_cast<double>(file_bytes) / samples);
  fmt::print("head_samples={}\nhead_chunk_bytes_per_sample={:.3f}\n", stats->head.samples, stats->head.bytes_per_sample);
  fmt::print("openmetrics_bytes={}\nopenmetrics_s={:.2f}\n", *om_bytes, om_s);
  return 0;
}

std::string slurp(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  ok = static_cast<bool>(in);
  return s.str();
}

int compare(const std::string& left_path, const std::string& right_path, double rel, double abs) {
  bool ok_l = false, ok_r = false;
  const auto left = slurp(left_path, ok_l), right = slurp(right_path, ok_r);
  if (!ok_l || !ok_r) {
    fmt::print(stderr, "history_fixture: cannot read {}\n", ok_l ? right_path : left_path);
    return 2;
  }
  const auto d = diff_query_results(left, right, rel, abs);
  if (!d) {
    fmt::print("error: {}\n", d.error());
    return 2;
  }
  fmt::print("series={}/{} points={} mismatches={}{}{}\n", d->series_left, d->series_right, d->points, d->mismatches,
             d->same() ? "" : " first: ", d->first_mismatch);
  return d->same() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Data and result check for bench/query_range_vs_prometheus.sh"};
  app.require_subcommand(1);

  auto* write = app.add_subcommand("write", "write a gpuscope data dir and an OpenMetrics file of the same samples");
  std::filesystem::path out;
  std::int64_t interval_ms = 15'000, end_ms = 0;
  double hours = 25.5;
  unsigned gpus = 8;
  std::uint64_t seed = 1;
  write->add_option("--out", out, "output directory (gets data/ and history.om)")->required();
  write->add_option("--interval-ms", interval_ms, "time between readings (default 15000)")->check(CLI::Range(100, 60'000));
  write->add_option("--hours", hours, "span covered, last reading at --end-ms (default 25.5)")->check(CLI::Range(0.01, 24.0 * 30));
  write->add_option("--end-ms", end_ms, "the last reading's time (default: 10 minutes ago)");
  write->add_option("--gpus", gpus, "GPUs (default 8)")->check(CLI::Range(1, 8));
  write->add_option("--seed", seed, "job schedule and noise seed (default 1)");
  bool no_openmetrics = false;
  write->add_flag("--no-openmetrics", no_openmetrics, "write the data dir only (no history.om)");

  auto* cmp = app.add_subcommand("compare", "compare two query_range responses (exit 1 when they differ)");
  std::string left, right;
  double rel = 1e-6, abs = 1e-9;
  cmp->add_option("LEFT", left, "a query_range JSON response")->required();
  cmp->add_option("RIGHT", right, "the other one")->required();
  cmp->add_option("--rel", rel, "relative tolerance (default 1e-6)");
  cmp->add_option("--abs", abs, "absolute tolerance near zero (default 1e-9)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*write) return write_fixture(out, interval_ms, hours, end_ms, gpus, seed, !no_openmetrics);
  return compare(left, right, rel, abs);
}

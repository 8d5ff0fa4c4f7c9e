#include "remote_write/remote_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <atomic>
#include <map>
#include <thread>
#include <sstream>

#include "remote_write/write_request.h"
#include "store/series_set.h"

namespace gpuscope::remote_write {
namespace {

using std::chrono::milliseconds;

constexpr std::int64_t kWriterStartMs = 1767225600000;  // the VirtualClock's default start

// A receiver that keeps what it is sent as Prometheus's head does: per series the samples in order; a
// sample older than the series' newest is rejected as out of order (the whole request then fails with
// 400, as Prometheus answers), one equal in time and value to the newest is accepted and dropped.
class ModelReceiver final : public WriteTransport {
 public:
  PostResult post(const std::string& body) override {
    ++posts;
    if (before_apply) before_apply();
    if (!script.empty()) {
      const int status = script.front();
      script.erase(script.begin());
      if (status != 200) return PostResult{status, "scripted", retry_after};
    }
    auto decoded = decode_write_request(body);
    if (!decoded) return PostResult{400, decoded.error(), std::nullopt};
    for (const auto& s : *decoded) {
      auto& kept = series[s.labels];
      for (const auto& sample : s.samples) {
        if (!kept.empty() && sample.t_ms < kept.back().t_ms) {
          ++out_of_order;
          return PostResult{400, "out of order sample", std::nullopt};
        }
        if (!kept.empty() && sample.t_ms == kept.back().t_ms) {
          if (sample.value != kept.back().value) ++duplicate_conflicts;
          ++identical_duplicates;
          continue;
        }
        kept.push_back(sample);
      }
    }
    return PostResult{200, "", std::nullopt};
  }

  std::vector<int> script;  // statuses to answer before accepting (200 accepts)
  std::optional<milliseconds> retry_after;
  std::function<void()> before_apply;
  std::map<store::Labels, std::vector<store::Sample>> series;
  std::atomic<int> posts{0};  // read by a test while a writer's thread posts
  int out_of_order = 0, identical_duplicates = 0, duplicate_conflicts = 0;
};

// A transport that forwards to a receiver the test keeps (a writer owns its transport).
class ForwardingTransport final : public WriteTransport {
 public:
  explicit ForwardingTransport(ModelReceiver& r) : r_(r) {}
  PostResult post(const std::string& body) override { return r_.post(body); }

 private:
  ModelReceiver& r_;
};

struct WriterFixture {
  model::VirtualClock clock;
  store::SeriesSet store;
  ModelReceiver receiver;
  std::ostringstream log_text;
  log::Logger log{log_text, log::Level::kDebug};
  std::filesystem::path dir;

  explicit WriterFixture(const std::string& name) {
    dir = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
  }
  ~WriterFixture() { std::filesystem::remove_all(dir); }

  // Readings of `n` series every second in [from, to) (series "odd" every 1.5 s too).
  void record(std::int64_t from, std::int64_t to, int n = 3) {
    for (std::int64_t t = from; t < to; t += 500) {
      for (int i = 0; t % 1000 == 0 && i < n; ++i) {
        store.add(store::Labels{{"__name__", "DCGM_FI_DEV_GPU_UTIL"}, {"gpu", std::to_string(i)}}, t,
                  static_cast<double>(t / 1000 % 100 + i));
      }
      if (t % 1500 == 0) store.add(store::Labels{{"__name__", "odd"}}, t, static_cast<double>(t % 7));
    }
  }

  RemoteWriterOptions options(std::size_t per_send = 3) {
    RemoteWriterOptions o;
    o.receiver = *receiver_from_url("http://127.0.0.1:1/api/v1/write");
    o.receiver.queue.max_samples_per_send = per_send;
    o.data_dir = dir;
    o.settle = milliseconds(2000);
    o.unit_random = [] { return 0.5; };
    return o;
  }

  std::unique_ptr<RemoteWriter> writer(RemoteWriterOptions o) {
    auto w = std::make_unique<RemoteWriter>(std::move(o), store, std::make_unique<ForwardingTransport>(receiver), clock, log);
    w->init();
    return w;
  }

  // Steps until the writer is idle (everything settled sent), advancing the clock over retry waits.
  void drain(RemoteWriter& w, int max_steps = 10000) {
    for (int i = 0; i < max_steps; ++i) {
      const auto r = w.step();
      if (r.step == RemoteWriter::Step::kIdle && r.wait.count() > 0) return;
      if (r.step == RemoteWriter::Step::kRetry) clock.advance(r.wait);
    }
    FAIL() << "the writer never went idle";
  }

  // What the store holds in [from, to], by series: what the receiver must hold.
  std::map<store::Labels, std::vector<store::Sample>> expected(std::int64_t from, std::int64_t to) const {
    auto all = store::LabelMatcher::make(store::LabelMatcher::Op::kRegex, "__name__", ".+");
    std::map<store::Labels, std::vector<store::Sample>> out;
    auto selected = store.select(std::span(&*all, 1), from, to);
    for (auto& s : *selected) out[s.labels] = s.samples;
    return out;
  }
};

bool same_samples(const std::map<store::Labels, std::vector<store::Sample>>& a,
                  const std::map<store::Labels, std::vector<store::Sample>>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [labels, samples] : a) {
    auto it = b.find(labels);
    if (it == b.end() || it->second.size() != samples.size()) return false;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (samples[i].t_ms != it->second[i].t_ms || samples[i].value != it->second[i].value) return false;
    }
  }
  return true;
}

TEST(RemoteWriter, SendsEverySettledSampleOnceInOrderAndPersistsItsCursor) {
  WriterFixture f("rw_writer_all");
  auto w = f.writer(f.options());
  const std::int64_t start = kWriterStartMs;
  f.record(start, start + 30'000);
  f.clock.advance(milliseconds(32'000));  // everything up to start + 30 s is settled (settle 2 s)
  f.drain(*w);
  // The writer starts at now - settle: the readings from start on (start itself included, being after it).
  EXPECT_TRUE(same_samples(f.receiver.series, f.expected(start - 2000 + 1, start + 30'000)));
  EXPECT_EQ(f.receiver.out_of_order, 0);
  EXPECT_EQ(f.receiver.identical_duplicates, 0);
  const auto stats = w->stats();
  std::uint64_t total = 0;
  for (const auto& [labels, samples] : f.receiver.series) total += samples.size();
  EXPECT_EQ(stats.samples_sent, total);
  EXPECT_EQ(stats.samples_failed, 0u);
  EXPECT_EQ(stats.samples_pending, 0u);
  EXPECT_EQ(stats.requests.at("200"), static_cast<std::uint64_t>(f.receiver.posts.load()));
  EXPECT_EQ(stats.cursor_ms, start + 30'000);
  // A restart resumes there: nothing is sent again.
  w.reset();
  const int posts = f.receiver.posts.load();
  auto again = f.writer(f.options());
  f.drain(*again);
  EXPECT_EQ(f.receiver.posts.load(), posts);
}

TEST(RemoteWriter, AReceiverAwayGetsEverythingWhenItReturnsWithGrowingWaits) {
  WriterFixture f("rw_writer_outage");
  auto o = f.options();
  o.receiver.queue.min_backoff = milliseconds(100);
  o.receiver.queue.max_backoff = milliseconds(1600);
  auto w = f.writer(o);
  const std::int64_t start = kWriterStartMs;
  f.receiver.script.assign(8, 0);  // eight attempts with no response, then it is back
  std::vector<std::int64_t> waits;
  f.record(start, start + 22'000);
  f.clock.advance(milliseconds(22'000));
  for (int i = 0; i < 10000; ++i) {
    const auto r = w->step();
    if (r.step == RemoteWriter::Step::kIdle && r.wait.count() > 0) break;
    if (r.step == RemoteWriter::Step::kRetry) {
      waits.push_back(r.wait.count());
      // The agent keeps reading while the receiver is away.
      f.record(f.clock.unix_ms(), f.clock.unix_ms() + r.wait.count());
      f.clock.advance(r.wait);
    }
  }
  // min * 2^n jittered to 75 % (unit_random 0.5), capped at max.
  const std::vector<std::int64_t> want = {75, 150, 300, 600, 1200, 1200, 1200, 1200};
  EXPECT_EQ(waits, want);
  EXPECT_TRUE(same_samples(f.receiver.series, f.expected(start - 2000 + 1, f.clock.unix_ms() - 2000)));
  EXPECT_EQ(f.receiver.out_of_order, 0);
  EXPECT_EQ(w->stats().requests.at("error"), 8u);
  EXPECT_NE(f.log_text.str().find("retrying with backoff"), std::string::npos);
  EXPECT_NE(f.log_text.str().find("receiver reachable again"), std::string::npos);
}

TEST(RemoteWriter, ARefusedRequestIsDroppedCountedAndPassed) {
  WriterFixture f("rw_writer_refused");
  auto w = f.writer(f.options(100));
  const std::int64_t start = kWriterStartMs;
  f.record(start, start + 5000, 2);
  f.clock.advance(milliseconds(7000));
  f.receiver.script = {400};
  f.drain(*w);
  const auto stats = w->stats();
  // The first request (the readings at `start`: 2 series and "odd") was refused, the rest arrived.
  EXPECT_EQ(stats.samples_failed, 3u);
  std::uint64_t total = 0;
  for (const auto& [labels, samples] : f.receiver.series) total += samples.size();
  EXPECT_EQ(stats.samples_sent, total);
  EXPECT_EQ(stats.cursor_ms, start + 5000);
  EXPECT_EQ(stats.requests.at("400"), 1u);
  // Logged once per kind, without the URL's credentials (none here) but with the status.
  EXPECT_NE(f.log_text.str().find("HTTP 400"), std::string::npos);
}

TEST(RemoteWriter, TooManyRetriesDoNotLoseOrder429HonoursRetryAfter) {
  WriterFixture f("rw_writer_429");
  auto w = f.writer(f.options());
  f.record(kWriterStartMs, kWriterStartMs + 3000);
  f.clock.advance(milliseconds(5000));
  f.receiver.script = {429};
  f.receiver.retry_after = std::chrono::seconds(7);
  const auto r = w->step();
  EXPECT_EQ(r.step, RemoteWriter::Step::kRetry);
  EXPECT_EQ(r.wait, std::chrono::seconds(7));
  f.drain(*w);
  EXPECT_TRUE(same_samples(f.receiver.series, f.expected(kWriterStartMs - 1999, kWriterStartMs + 3000)));
}

// The agent killed after the receiver took a request but before the cursor moved past it: the next run
// sends that request again, and the receiver (a Prometheus head) rejects nothing as out of order.
TEST(RemoteWriter, AResendAfterALostAcknowledgementIsAcceptedAsIdenticalDuplicates) {
  for (std::size_t per_send : {2u, 3u, 7u, 100u}) {
    WriterFixture f("rw_writer_kill");
    auto first = f.writer(f.options(per_send));
    const std::int64_t start = kWriterStartMs;
    f.record(start, start + 20'000);
    f.clock.advance(milliseconds(22'000));
    const auto cursor_path = f.dir / "remote_write";
    std::string before;  // the cursor file as it was when the 6th request went out
    int n = 0;
    f.receiver.before_apply = [&] {
      if (++n != 6) return;
      for (const auto& e : std::filesystem::directory_iterator(cursor_path)) {
        std::ifstream in(e.path());
        before.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
    };
    for (int i = 0; i < 6; ++i) ASSERT_EQ(first->step().step, RemoteWriter::Step::kSent);
    first.reset();
    ASSERT_FALSE(before.empty());
    for (const auto& e : std::filesystem::directory_iterator(cursor_path)) std::ofstream(e.path()) << before;
    f.receiver.before_apply = nullptr;
    auto second = f.writer(f.options(per_send));
    f.drain(*second);
    EXPECT_EQ(f.receiver.out_of_order, 0) << "per_send " << per_send;
    EXPECT_EQ(f.receiver.duplicate_conflicts, 0);
    EXPECT_GT(f.receiver.identical_duplicates, 0) << "the 6th request was not sent again";
    EXPECT_TRUE(same_samples(f.receiver.series, f.expected(start - 1999, start + 20'000))) << "per_send " << per_send;
  }
}

TEST(RemoteWriter, ReadsStayWithinTheSampleBudgetByShrinkingTheWindow) {
  WriterFixture f("rw_writer_budget");
  auto o = f.options(4);
  o.receiver.queue.max_samples_per_read = 10;
  o.read_window = milliseconds(60'000);
  auto w = f.writer(o);
  f.record(kWriterStartMs, kWriterStartMs + 30'000, 4);
  f.clock.advance(milliseconds(32'000));
  std::uint64_t most_pending = 0;
  for (int i = 0; i < 10000; ++i) {
    const auto r = w->step();
    most_pending = std::max(most_pending, w->stats().samples_pending);
    if (r.step == RemoteWriter::Step::kIdle && r.wait.count() > 0) break;
  }
  EXPECT_LE(most_pending, 10u);
  EXPECT_TRUE(same_samples(f.receiver.series, f.expected(kWriterStartMs - 1999, kWriterStartMs + 30'000)));
}

TEST(RemoteWriter, RelabelRulesAndExternalLabelsShapeWhatIsSent) {
  WriterFixture f("rw_writer_labels");
  auto o = f.options();
  o.receiver.write_relabel.push_back(*make_relabel_rule(WriteRelabelRule::Action::kDrop, {"__name__"}, ";", "odd"));
  o.external_labels = {{"cluster", "prod"}, {"gpu", "ignored: the series' own label wins"}};
  auto w = f.writer(o);
  f.record(kWriterStartMs, kWriterStartMs + 4000, 2);
  f.clock.advance(milliseconds(6000));
  f.drain(*w);
  ASSERT_EQ(f.receiver.series.size(), 2u);
  for (const auto& [labels, samples] : f.receiver.series) {
    EXPECT_EQ(labels.metric_name(), "DCGM_FI_DEV_GPU_UTIL");
    EXPECT_EQ(labels.get("cluster"), "prod");
    EXPECT_TRUE(labels.get("gpu") == "0" || labels.get("gpu") == "1");
    EXPECT_EQ(samples.size(), 4u);
  }
}

TEST(RemoteWriter, NothingIsReadBeforeItSettles) {
  WriterFixture f("rw_writer_settle");
  auto w = f.writer(f.options());
  f.record(kWriterStartMs, kWriterStartMs + 3000, 1);
  f.clock.advance(milliseconds(2500));  // only start and start + 1 s lie before now - settle... start + 0.5 s
  f.drain(*w);
  std::uint64_t total = 0;
  for (const auto& [labels, samples] : f.receiver.series) {
    for (const auto& s : samples) EXPECT_LE(s.t_ms, f.clock.unix_ms() - 2000);
    total += samples.size();
  }
  EXPECT_EQ(total, 2u);  // the series and "odd" at start
  f.clock.advance(milliseconds(5000));
  f.drain(*w);
  EXPECT_TRUE(same_samples(f.receiver.series, f.expected(kWriterStartMs - 1999, kWriterStartMs + 3000)));
}

TEST(RemoteWriter, StopEndsTheThreadWhileTheReceiverIsAway) {
  WriterFixture f("rw_writer_stop");
  f.receiver.script.assign(1000, 0);
  auto o = f.options();
  o.receiver.queue.min_backoff = milliseconds(60'000);
  RemoteWriter w(o, f.store, std::make_unique<ForwardingTransport>(f.receiver), f.clock, f.log);
  w.start();  // from now on
  while (f.clock.waiters() == 0) std::this_thread::sleep_for(milliseconds(1));
  f.record(kWriterStartMs, kWriterStartMs + 3000);
  f.clock.advance(milliseconds(5000));
  while (f.receiver.posts == 0) std::this_thread::sleep_for(milliseconds(1));
  w.stop();  // returns although the backoff (a minute of virtual time) has not passed
  EXPECT_EQ(f.receiver.posts.load(), 1);
}

}  // namespace
}  // namespace gpuscope::remote_write

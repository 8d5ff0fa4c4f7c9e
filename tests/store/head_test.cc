#include "store/head.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "store/series_set.h"
#include "store_test_support.h"

namespace gpuscope::store {
namespace {

using testing::kT0;
using testing::select_all;

Labels gpu_series(std::string_view name, int gpu) {
  return Labels{{"__name__", std::string(name)}, {"gpu", std::to_string(gpu)}, {"Hostname", "node1"}};
}

LabelMatcher matcher(LabelMatcher::Op op, std::string name, std::string value) {
  return *LabelMatcher::make(op, std::move(name), std::move(value));
}

TEST(Head, SelectsByMatchersAndInclusiveRangeSortedByLabels) {
  Head head;
  for (int i = 0; i < 10; ++i) {
    for (int gpu : {1, 0}) {
      ASSERT_TRUE(head.append(gpu_series("DCGM_FI_DEV_GPU_TEMP", gpu), kT0 + i * 1000, 50 + gpu + i));
      ASSERT_TRUE(head.append(gpu_series("DCGM_FI_DEV_POWER_USAGE", gpu), kT0 + i * 1000, 300.5 + i));
    }
  }
  const LabelMatcher temp[] = {matcher(LabelMatcher::Op::kEqual, "__name__", "DCGM_FI_DEV_GPU_TEMP")};
  auto r = head.select(temp, kT0 + 2000, kT0 + 5000);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].labels.get("gpu"), "0");  // sorted by labels
  EXPECT_EQ((*r)[1].labels.get("gpu"), "1");
  ASSERT_EQ((*r)[1].samples.size(), 4u);  // both ends inclusive
  EXPECT_EQ((*r)[1].samples.front().t_ms, kT0 + 2000);
  EXPECT_EQ((*r)[1].samples.front().value, 53);
  EXPECT_EQ((*r)[1].samples.back().t_ms, kT0 + 5000);

  const LabelMatcher regex[] = {matcher(LabelMatcher::Op::kRegex, "__name__", "DCGM_FI_DEV_.*"),
                                matcher(LabelMatcher::Op::kNotEqual, "gpu", "0")};
  r = head.select(regex, kT0, kT0 + 100000);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 2u);
  for (const auto& s : *r) {
    EXPECT_EQ(s.labels.get("gpu"), "1");
    EXPECT_EQ(s.samples.size(), 10u);
  }
  // Series without samples in the range are left out.
  r = head.select(temp, kT0 + 20000, kT0 + 30000);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->empty());
}

TEST(Head, RejectsOutOfOrderAndDuplicateSamplesAndCountsThem) {
  Head head;
  const auto l = gpu_series("DCGM_FI_DEV_SM_CLOCK", 0);
  ASSERT_TRUE(head.append(l, kT0 + 1000, 1980));
  ASSERT_TRUE(head.append(l, kT0 + 2000, 1980));
  auto dup = head.append(l, kT0 + 2000, 1985);
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().reason, AppendError::Reason::kDuplicate);
  auto old = head.append(l, kT0 + 1500, 1);
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().reason, AppendError::Reason::kOutOfOrder);
  EXPECT_NE(old.error().message.find("out of order"), std::string::npos);
  EXPECT_FALSE(head.append(Labels{}, kT0, 1));

  const auto st = head.stats();
  EXPECT_EQ(st.out_of_order_rejected, 1u);
  EXPECT_EQ(st.duplicates_rejected, 1u);
  EXPECT_EQ(st.samples, 2u);
  auto all = select_all(head);
  ASSERT_EQ(all.size(), 1u);
  ASSERT_EQ(all[0].samples.size(), 2u);
  EXPECT_EQ(all[0].samples[1].value, 1980);

  // In a reading, a rejected sample is reported and the others still go in.
  const LabeledValue reading[] = {{l, 5}, {gpu_series("DCGM_FI_DEV_SM_CLOCK", 1), 6}};
  auto rr = head.append_reading(kT0 + 1500, reading);
  EXPECT_EQ(rr.appended, 1u);
  EXPECT_EQ(rr.rejected, 1u);
  EXPECT_NE(rr.first_error, "");
}

TEST(Head, SealsChunksAt120SamplesAndAtTwoHours) {
  Head head;
  for (int i = 0; i < 250; ++i) ASSERT_TRUE(head.append(gpu_series("a", 0), kT0 + i * 1000, i % 7));
  EXPECT_EQ(head.stats().chunks, 3u);  // 120 + 120 + 10
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(head.append(gpu_series("b", 0), kT0 + i * 30 * 60 * 1000, i));
  // 0..120 min fit in one chunk (a span of exactly 2 h); 150 min starts the next.
  EXPECT_EQ(head.stats().chunks, 5u);
  auto all = select_all(head);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].samples.size(), 250u);
  for (int i = 0; i < 250; ++i) ASSERT_EQ(all[0].samples[static_cast<std::size_t>(i)].value, i % 7);
  EXPECT_EQ(all[1].samples.size(), 6u);
  // Chunks of a range are picked by their time span: a range inside the second chunk reads only it.
  auto mid = head.select({}, kT0 + 130000, kT0 + 131000);
  ASSERT_TRUE(mid);
  ASSERT_EQ(mid->size(), 1u);
  EXPECT_EQ((*mid)[0].samples.size(), 2u);
}

TEST(Head, MarksSeriesStaleOnceWhenTheyLeaveAReadingAndResumesThem) {
  Head head;
  const auto a = gpu_series("DCGM_FI_DEV_GPU_UTIL", 0), b = gpu_series("DCGM_FI_DEV_GPU_UTIL", 1);
  const LabeledValue both[] = {{a, 10}, {b, 20}};
  const LabeledValue only_a[] = {{a, 11}};
  EXPECT_EQ(head.append_reading(kT0, both).stale_markers, 0u);
  auto r = head.append_reading(kT0 + 1000, only_a);  // GPU 1 is lost
  EXPECT_EQ(r.appended, 1u);
  EXPECT_EQ(r.stale_markers, 1u);
  EXPECT_EQ(head.append_reading(kT0 + 2000, only_a).stale_markers, 0u);  // only once
  EXPECT_EQ(head.append_reading(kT0 + 3000, only_a).stale_markers, 0u);
  EXPECT_EQ(head.append_reading(kT0 + 4000, both).stale_markers, 0u);  // it comes back
  EXPECT_EQ(head.append_reading(kT0 + 5000, only_a).stale_markers, 1u);  // and goes again

  auto all = select_all(head);
  ASSERT_EQ(all.size(), 2u);
  const auto& bs = all[1].samples;
  ASSERT_EQ(all[1].labels, b);
  ASSERT_EQ(bs.size(), 4u);
  EXPECT_EQ(bs[0].value, 20);
  EXPECT_EQ(bs[1].t_ms, kT0 + 1000);
  EXPECT_TRUE(is_stale_marker(bs[1].value));
  EXPECT_EQ(bs[2].t_ms, kT0 + 4000);
  EXPECT_EQ(bs[2].value, 20);
  EXPECT_TRUE(is_stale_marker(bs[3].value));
  EXPECT_EQ(all[0].samples.size(), 6u);
  EXPECT_EQ(head.stats().stale_markers_written, 2u);

  // A series appended outside readings never gets a marker from them.
  ASSERT_TRUE(head.append(gpu_series("gpuscope_other", 0), kT0 + 5500, 1));
  EXPECT_EQ(head.append_reading(kT0 + 6000, only_a).stale_markers, 0u);
}

TEST(Head, ReportsLabelNamesAndValuesOfSeriesInRange) {
  Head head;
  ASSERT_TRUE(head.append(Labels{{"__name__", "up"}, {"job", "gpuscope"}}, kT0, 1));
  ASSERT_TRUE(head.append(gpu_series("DCGM_FI_DEV_GPU_TEMP", 0), kT0 + 60000, 40));
  ASSERT_TRUE(head.append(gpu_series("DCGM_FI_DEV_GPU_TEMP", 3), kT0 + 60000, 41));

  auto names = head.label_names({}, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, (std::vector<std::string>{"Hostname", "__name__", "gpu", "job"}));
  names = head.label_names({}, kT0, kT0 + 1000);
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, (std::vector<std::string>{"__name__", "job"}));

  const LabelMatcher temp[] = {matcher(LabelMatcher::Op::kEqual, "__name__", "DCGM_FI_DEV_GPU_TEMP")};
  auto gpus = head.label_values("gpu", temp, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(gpus);
  EXPECT_EQ(*gpus, (std::vector<std::string>{"0", "3"}));
  auto metric_names = head.label_values("__name__", {}, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(metric_names);
  EXPECT_EQ(*metric_names, (std::vector<std::string>{"DCGM_FI_DEV_GPU_TEMP", "up"}));
}

TEST(Head, AccountsForChunkAndLabelMemory) {
  Head head;
  for (int i = 0; i < 3600; ++i) {
    ASSERT_TRUE(head.append(gpu_series("DCGM_FI_DEV_SM_CLOCK", 0), kT0 + i * 1000, 1980));
    ASSERT_TRUE(head.append(gpu_series("DCGM_FI_DEV_GPU_TEMP", 0), kT0 + i * 1000, 40 + (i / 60) % 5));
  }
  const auto st = head.stats();
  EXPECT_EQ(st.series, 2u);
  EXPECT_EQ(st.samples, 7200u);
  EXPECT_EQ(st.chunks, 60u);
  EXPECT_GT(st.chunk_bytes, 0u);
  EXPECT_GE(st.label_bytes, 2 * 3 * sizeof(Label));
  // Regular timestamps and slow-moving values: well under the goal of 2 bytes.
  EXPECT_LT(st.bytes_per_sample, 1.0);
  EXPECT_DOUBLE_EQ(st.bytes_per_sample, static_cast<double>(st.chunk_bytes) / 7200);
}

// One writer (the sampler) and several readers (queries) at once: readers must always see whole,
// consistent series. Run under ASan (build-store-asan) to catch races on chunk memory.
TEST(Head, ReadersSeeConsistentSeriesWhileOneWriterAppends) {
  Head head;
  constexpr int kSeries = 40, kReadings = 1500;
  std::vector<Labels> labels;
  for (int k = 0; k < kSeries; ++k) labels.push_back(gpu_series("m" + std::to_string(k % 4), k));
  auto value = [](int k, std::int64_t t) { return k * 1000.0 + static_cast<double>((t - kT0) / 1000) * 0.5; };

  std::atomic<bool> done{false};
  std::atomic<int> failures{0}, reads{0}, readers_started{0};
  std::thread writer([&] {
    // On a loaded machine the writer could finish before any reader ran: then nothing was read concurrently.
    while (readers_started.load() < 3) std::this_thread::yield();
    std::vector<LabeledValue> reading;
    for (int i = 0; i < kReadings; ++i) {
      const std::int64_t t = kT0 + i * 1000;
      reading.clear();
      // Every 100 readings one GPU drops out for a reading, so markers are written concurrently too.
      for (int k = 0; k < kSeries; ++k) {
        if (i % 100 == 50 && k == i / 100 % kSeries) continue;
        reading.push_back({labels[static_cast<std::size_t>(k)], value(k, t)});
      }
      if (head.append_reading(t, reading).rejected != 0) failures.fetch_add(1);
    }
    done = true;
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      readers_started.fetch_add(1);
      do {  // at least one read, however late this thread runs
        const LabelMatcher m[] = {matcher(LabelMatcher::Op::kEqual, "__name__", "m" + std::to_string(r))};
        auto sel = head.select(m, INT64_MIN, INT64_MAX);
        if (!sel) {
          failures.fetch_add(1);
          continue;
        }
        for (const auto& s : *sel) {
          const int k = std::stoi(std::string(s.labels.get("gpu")));
          for (std::size_t i = 0; i < s.samples.size(); ++i) {
            const auto& smp = s.samples[i];
            if (i > 0 && smp.t_ms <= s.samples[i - 1].t_ms) failures.fetch_add(1);
            if (!is_stale_marker(smp.value) && smp.value != value(k, smp.t_ms)) failures.fetch_add(1);
          }
        }
        (void)head.stats();
        (void)head.label_values("gpu", m, INT64_MIN, INT64_MAX);
        reads.fetch_add(1);
      } while (!done);
    });
  }
  writer.join();
  for (auto& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(head.stats().samples, static_cast<std::size_t>(kSeries) * kReadings);  // 15 lost readings, 15 markers
}

// Flush support while the disk is broken: memory is bounded by age, and what is dropped without
// reaching disk is counted (persisted chunks dropped with it are not).
TEST(Head, DropsTheOldestChunksWhateverTheirStateAndCountsOnlyTheUnpersisted) {
  Head head;
  const Labels l = gpu_series("DCGM_FI_DEV_GPU_TEMP", 0);
  for (int i = 0; i < 240; ++i) ASSERT_TRUE(head.append(l, kT0 + i * 1000, i));  // chunk 1 sealed, chunk 2 open
  head.mark_persisted(head.unpersisted_chunks());
  for (int i = 240; i < 600; ++i) ASSERT_TRUE(head.append(l, kT0 + i * 1000, i));  // chunks 3 to 5
  EXPECT_EQ(head.stats().oldest_sample_ms, kT0);
  // Chunks 1 and 2 (persisted) and 3 (not) end before 360 s; 4 and 5 stay.
  EXPECT_EQ(head.drop_unpersisted_before(kT0 + 360 * 1000), 120u);
  const auto st = head.stats();
  EXPECT_EQ(st.samples, 240u);
  EXPECT_EQ(st.unpersisted_samples_dropped, 120u);
  EXPECT_EQ(st.samples_appended, 600u);
  auto all = select_all(head);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].samples.front().t_ms, kT0 + 360 * 1000);
  EXPECT_TRUE(head.append(l, kT0 + 600 * 1000, 600));  // the series goes on
}

// The database was lost: what memory holds is all there is, to be written again in full.
TEST(Head, ForgetPersistedMakesEveryChunkUnpersistedAndForgetsSeriesWithNothingInMemory) {
  Head head;
  const Labels live = gpu_series("DCGM_FI_DEV_GPU_TEMP", 0), gone = gpu_series("DCGM_FI_DEV_GPU_TEMP", 1);
  for (int i = 0; i < 130; ++i) {
    ASSERT_TRUE(head.append(live, kT0 + i * 1000, i));
    if (i < 10) {
      ASSERT_TRUE(head.append(gone, kT0 + i * 1000, i));
    }
  }
  head.mark_persisted(head.unpersisted_chunks());
  head.drop_persisted_before(kT0 + 100 * 1000);  // `gone` leaves memory (persisted), `live` keeps its 2 chunks
  EXPECT_TRUE(head.unpersisted_chunks().empty());
  EXPECT_EQ(head.forget_persisted(), 130u);
  EXPECT_EQ(head.stats().series, 1u);
  const auto pending = head.unpersisted_chunks();
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_TRUE(pending[0].sealed);
  EXPECT_EQ(pending[0].chunk->samples() + pending[1].chunk->samples(), 130u);
  EXPECT_EQ(pending[0].labels, pending[1].labels);  // one copy of the series' labels
}

}  // namespace
}  // namespace gpuscope::store

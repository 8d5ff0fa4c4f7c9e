// Repeated kernel sequences on a hand-built stream whose repeats, GPU time and gaps follow
// from its construction.
#include "trace/kernel_sequences.h"

#include <gtest/gtest.h>

#include "extras_test_support.h"
#include "trace/extras_report.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::analyze_text;
using testing::ExtrasTrace;

constexpr std::int64_t seq_us = 1000;

// Stream 7: A B C four times, kernels of 10 us 2 us apart ([12i, 12i + 10), i = 0..11), all launched
// early by 1 us calls (kernel wait). Then, after a 2 ms gap that ends the run, D E D E 5 us apart.
// A B C: 4 repeats, 120 us of kernels, 2 gaps of 2 us inside each = 16 us, 8 launches saved at the mean
// launch call (1 us): 24 us. A B C A B and B C A B C save as much but are longer (and lie inside
// A B C's repeats), C A B, A B, ... lie inside them too. D E: 2 repeats, 40 us, 2 x 5 us inside, 2
// launches saved: 12 us.
ExtrasTrace sequence_trace() {
  ExtrasTrace t;
  const char* abc[] = {"A", "B", "C"};
  long correlation = 1;
  for (int i = 0; i < 12; ++i, ++correlation) t.launch(correlation, i).kernel(abc[i % 3], 7, 12 * i, 10, correlation);
  const char* de[] = {"D", "E"};
  for (int i = 0; i < 4; ++i, ++correlation) t.launch(correlation, 100 + i).kernel(de[i % 2], 7, 2142 + 15 * i, 10, correlation);
  return t;
}

TEST(KernelSequences, RepeatsAndSavingsFollowFromTheConstruction) {
  const RankReport r = analyze_text(sequence_trace().json());
  ASSERT_EQ(r.devices.size(), 1u);
  const auto& seqs = r.devices[0].kernel_sequences;
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_EQ(seqs[0].kernels, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(seqs[0].stream, 7);
  EXPECT_EQ(seqs[0].repeats, 4u);
  EXPECT_EQ(seqs[0].kernel_ns, 120 * seq_us);
  EXPECT_EQ(seqs[0].inner_idle_ns, 16 * seq_us);
  EXPECT_EQ(seqs[0].launches_saved, 8u);
  EXPECT_EQ(seqs[0].launch_ns, 8 * seq_us);
  EXPECT_EQ(seqs[0].saving_ns(), 24 * seq_us);
  EXPECT_EQ(seqs[1].kernels, (std::vector<std::string>{"D", "E"}));
  EXPECT_EQ(seqs[1].repeats, 2u);
  EXPECT_EQ(seqs[1].kernel_ns, 40 * seq_us);
  EXPECT_EQ(seqs[1].inner_idle_ns, 10 * seq_us);
  EXPECT_EQ(seqs[1].saving_ns(), 12 * seq_us);
  const auto j = kernel_sequences_json(seqs);
  EXPECT_EQ(j[0]["repeats"], 4);
  EXPECT_EQ(j[0]["length"], 3);
  EXPECT_DOUBLE_EQ(j[0]["saving_seconds"].get<double>(), 24e-6);
}

TEST(KernelSequences, MaxLengthAndTopAreHonoured) {
  // Eight distinct kernels repeated twice: the whole run is one sequence of 8, found only when the
  // longest length allowed reaches 8.
  ExtrasTrace t;
  long correlation = 1;
  for (int rep = 0; rep < 2; ++rep) {
    for (int i = 0; i < 8; ++i, ++correlation) {
      t.launch(correlation, correlation).kernel(fmt::format("k{}", i), 3, 100 + 12 * (correlation - 1), 10, correlation);
    }
  }
  AnalysisOptions eight;
  const RankReport r8 = analyze_text(t.json(), {}, eight);
  ASSERT_FALSE(r8.devices[0].kernel_sequences.empty());
  EXPECT_EQ(r8.devices[0].kernel_sequences[0].kernels.size(), 8u);
  EXPECT_EQ(r8.devices[0].kernel_sequences[0].repeats, 2u);
  AnalysisOptions four;
  four.max_sequence_length = 4;
  four.sequence_top = 1;
  const RankReport r4 = analyze_text(t.json(), {}, four);
  ASSERT_EQ(r4.devices[0].kernel_sequences.size(), 1u);
  EXPECT_EQ(r4.devices[0].kernel_sequences[0].kernels.size(), 4u);
}

TEST(KernelSequences, OneKernelLaunchedOverAndOver) {
  // 20 "add" kernels 2 us apart (a Python loop of small ops): the run of 5 saves most (4 repeats x 4
  // gaps and launches = 16; 8 in a row repeats twice, 14; 4 in a row five times, 15; 2 in a row, 10).
  ExtrasTrace t;
  for (long c = 1; c <= 20; ++c) t.launch(c, c).kernel("add", 7, 100 + 12 * (c - 1), 10, c);
  const RankReport r = analyze_text(t.json());
  const auto& seqs = r.devices[0].kernel_sequences;
  ASSERT_FALSE(seqs.empty());
  EXPECT_EQ(seqs[0].kernels, std::vector<std::string>(5, "add"));
  EXPECT_EQ(seqs[0].repeats, 4u);
  EXPECT_EQ(seqs[0].inner_idle_ns, 16 * 2 * seq_us);
  EXPECT_EQ(seqs[0].saving_ns(), 16 * 3 * seq_us);
  std::string text;
  device_extras_text(text, r.devices[0]);
  EXPECT_NE(text.find("add  (x5 in a row)"), std::string::npos) << text;
}

TEST(KernelSequences, NothingRepeatsNothingListed) {
  ExtrasTrace t;
  t.launch(1, 0).kernel("a", 7, 0, 10, 1).launch(2, 1).kernel("b", 7, 12, 10, 2).launch(3, 2).kernel("c", 8, 0, 10, 3);
  const RankReport r = analyze_text(t.json());
  EXPECT_TRUE(r.devices[0].kernel_sequences.empty());
  std::string text;
  device_extras_text(text, r.devices[0]);
  EXPECT_NE(text.find("repeated kernel sequences: none"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuscope::trace

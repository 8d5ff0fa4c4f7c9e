#include "store/xor_chunk.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace gpuscope::store {
namespace {

struct Sample {
  std::int64_t t;
  double v;
};

std::uint64_t bits_of(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

double from_bits(std::uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// Appends every sample, reads them back, and checks times and exact value bits.
void expect_round_trip(const std::vector<Sample>& samples) {
  XorChunk chunk;
  for (const auto& s : samples) ASSERT_TRUE(chunk.append(s.t, s.v));
  ASSERT_EQ(chunk.samples(), samples.size());
  auto it = chunk.iterator();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    ASSERT_TRUE(it.next()) << "sample " << i << ": " << it.error();
    ASSERT_EQ(it.time(), samples[i].t) << "sample " << i;
    ASSERT_EQ(bits_of(it.value()), bits_of(samples[i].v)) << "sample " << i << " " << samples[i].v;
  }
  EXPECT_FALSE(it.next());
  EXPECT_EQ(it.error(), "");
}

TEST(XorChunk, RegularConstantSeriesCostsTwoBitsASample) {
  XorChunk chunk;
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(chunk.append(1767226200000 + i * 1000, 1980));
  // 1 bit of delta-of-delta and 1 bit of unchanged value per sample, after ~17 bytes of header.
  EXPECT_LE(chunk.bytes(), 17u + 1000 * 2 / 8 + 1);
  EXPECT_EQ(chunk.first_time(), 1767226200000);
  EXPECT_EQ(chunk.last_time(), 1767226200000 + 999 * 1000);
}

TEST(XorChunk, RoundTripsIntegersRatiosAndIrregularTimestamps) {
  std::mt19937_64 rng(7);
  std::vector<Sample> s;
  std::int64_t t = 1767226200000;
  double temp = 60, energy = 1e9;
  for (int i = 0; i < 5000; ++i) {
    // Mostly a 1 s grid, with jitter, gaps of every size, and a few huge jumps.
    std::int64_t step = 1000 + static_cast<std::int64_t>(rng() % 7) - 3;
    if (i % 97 == 0) step = 1 + static_cast<std::int64_t>(rng() % 100000);
    if (i % 499 == 0) step = 3'000'000'000LL + static_cast<std::int64_t>(rng() % 1000);
    t += step;
    if (rng() % 10 == 0) temp += static_cast<double>(static_cast<int>(rng() % 3) - 1);
    energy += 600.0 + static_cast<double>(rng() % 1000) / 7.0;
    const double ratio = std::uniform_real_distribution<double>(0, 1)(rng);
    s.push_back({t, i % 3 == 0 ? temp : (i % 3 == 1 ? energy : ratio)});
  }
  expect_round_trip(s);
}

TEST(XorChunk, KeepsTheExactBitsOfSpecialValues) {
  expect_round_trip({{1, 0.0},
                     {2, -0.0},
                     {3, std::numeric_limits<double>::quiet_NaN()},
                     {4, from_bits(kStaleNaNBits)},
                     {5, std::numeric_limits<double>::infinity()},
                     {6, -std::numeric_limits<double>::infinity()},
                     {7, std::numeric_limits<double>::denorm_min()},
                     {8, std::numeric_limits<double>::max()},
                     {9, -1.5},
                     {10, from_bits(kStaleNaNBits)},
                     {11, 1.0}});
}

TEST(XorChunk, NegativeAndExtremeTimestampsAndDeltaOfDeltaClassEdges) {
  std::vector<Sample> s{{-5'000'000'000'000LL, 1}, {-4'999'999'999'000LL, 2}};
  std::int64_t t = s.back().t, delta = 1000;
  // Delta-of-delta exactly at each class boundary, both signs, then beyond all of them.
  for (std::int64_t dod : {0LL, 8192LL, -8191LL, 8193LL, -8192LL, 65536LL, -65535LL, 65537LL, -65536LL, 524288LL,
                           -524287LL, 524289LL, -524288LL, 1LL << 40}) {
    delta += dod;
    ASSERT_GT(delta, 0);
    t += delta;
    s.push_back({t, static_cast<double>(dod)});
  }
  expect_round_trip(s);
}

TEST(XorChunk, ValuesThatDifferOnlyInTheirLowestBits) {
  // XORs with 32 and more leading zeros: the 5-bit leading-zero field must cap, not wrap.
  std::vector<Sample> s;
  double v = 1e9;
  for (int i = 0; i < 200; ++i) {
    s.push_back({i * 1000LL, v});
    v = std::nextafter(v, 2e9);
    if (i % 7 == 0) v = std::nextafter(std::nextafter(v, 2e9), 2e9);
  }
  expect_round_trip(s);
}

TEST(XorChunk, RefusesTimestampsThatDoNotIncrease) {
  XorChunk chunk;
  ASSERT_TRUE(chunk.append(1000, 1));
  EXPECT_FALSE(chunk.append(1000, 2));
  EXPECT_FALSE(chunk.append(999, 2));
  EXPECT_EQ(chunk.samples(), 1u);
  EXPECT_TRUE(chunk.append(1001, 2));
}

TEST(XorChunk, DamagedDataIsAnErrorNotACrash) {
  XorChunk chunk;
  for (int i = 0; i < 100; ++i) chunk.append(i * 1000, std::sin(i));
  const auto data = chunk.data();
  // Every truncation stops with an error, never reads past the end.
  for (std::size_t cut = 0; cut + 1 < data.size(); ++cut) {
    XorChunk::Iterator it(data.subspan(0, cut), chunk.samples());
    std::size_t n = 0;
    while (it.next()) ++n;
    EXPECT_LT(n, chunk.samples());
    EXPECT_FALSE(it.error().empty()) << "cut at " << cut;
  }
  // Flipped bits give wrong samples or an error, but the iterator always ends.
  std::mt19937 rng(3);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<std::uint8_t> bad(data.begin(), data.end());
    bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    XorChunk::Iterator it(bad, chunk.samples());
    std::size_t n = 0;
    while (it.next()) ++n;
    EXPECT_LE(n, chunk.samples());
  }
}

TEST(BitIo, WritesAndReadsBitsMostSignificantFirst) {
  BitWriter w;
  w.write_bits(0b101, 3);
  w.write_bits(0xabcd, 16);
  w.write_bit(true);
  ASSERT_EQ(w.bytes().size(), 3u);
  EXPECT_EQ(w.bytes()[0], 0b10110101);
  BitReader r(w.bytes());
  std::uint64_t v = 0;
  ASSERT_TRUE(r.read_bits(3, v));
  EXPECT_EQ(v, 0b101u);
  ASSERT_TRUE(r.read_bits(16, v));
  EXPECT_EQ(v, 0xabcdu);
  bool b = false;
  ASSERT_TRUE(r.read_bit(b));
  EXPECT_TRUE(b);
  ASSERT_TRUE(r.read_bits(4, v)) << "padding bits of the last byte";
  EXPECT_FALSE(r.read_bit(b));
}

}  // namespace
}  // namespace gpuscope::store

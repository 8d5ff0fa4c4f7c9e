// XorChunk: one series' samples compressed in memory as Prometheus and Gorilla do it: timestamps as
// delta-of-delta (1 bit per sample on a regular grid), values XOR'ed with the previous one (1 bit when
// unchanged, a few bytes when a float moves). Values keep their exact bits, so NaN payloads such as
// Prometheus's staleness marker survive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gpuscope::store {

class BitWriter {
 public:
  void write_bit(bool bit);
  void write_bits(std::uint64_t value, int count);  // the low `count` bits, most significant first
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
  int free_bits_ = 0;  // unused low bits in the last byte
};

class BitReader {
 public:
  explicit BitReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  // False (and nothing read) when fewer than `count` bits are left.
  bool read_bit(bool& bit);
  bool read_bits(int count, std::uint64_t& value);

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t position_ = 0;  // in bits
};

// Prometheus's staleness marker: a NaN with this exact bit pattern ends a series.
inline constexpr std::uint64_t kStaleNaNBits = 0x7ff0000000000002ULL;

class XorChunk {
 public:
  // Appends a sample. Timestamps (ms) must increase strictly; false (and nothing appended) otherwise.
  bool append(std::int64_t t_ms, double value);

  std::size_t samples() const { return count_; }
  std::size_t bytes() const { return writer_.bytes().size(); }
  std::span<const std::uint8_t> data() const { return writer_.bytes(); }
  std::int64_t first_time() const { return first_t_; }
  std::int64_t last_time() const { return last_t_; }

  // Reads `count` samples from encoded bytes (a chunk's data(), or a persisted copy of it).
  class Iterator {
   public:
    Iterator(std::span<const std::uint8_t> data, std::size_t count) : reader_(data), left_(count) {}
    // Moves to the next sample; false at the end or when the data is damaged (then error() says how).
    bool next();
    std::int64_t time() const { return t_; }
    double value() const;
    const std::string& error() const { return error_; }

   private:
    bool fail(std::string what);
    BitReader reader_;
    std::size_t left_;
    std::size_t read_ = 0;
    std::int64_t t_ = 0;
    std::int64_t delta_ = 0;
    std::uint64_t bits_ = 0;
    int leading_ = 0, trailing_ = 0;
    std::string error_;
  };
  Iterator iterator() const { return Iterator(data(), count_); }

 private:
  BitWriter writer_;
  std::size_t count_ = 0;
  std::int64_t first_t_ = 0, last_t_ = 0, last_delta_ = 0;
  std::uint64_t last_bits_ = 0;
  int leading_ = 0xff, trailing_ = 0;  // the previous value's XOR window; 0xff: none yet
};

}  // namespace gpuscope::store

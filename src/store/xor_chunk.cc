#include "store/xor_chunk.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

namespace gpuscope::store {
namespace {

// Delta-of-delta classes: a prefix of 1 bits ended by a 0 (none for the last), then a signed field.
struct DodClass {
  int prefix_ones;
  int bits;
};
constexpr DodClass kDodClasses[] = {{1, 14}, {2, 17}, {3, 20}};

bool fits(std::int64_t v, int bits) {
  const std::int64_t lo = -(std::int64_t{1} << (bits - 1)) + 1;
  const std::int64_t hi = std::int64_t{1} << (bits - 1);
  return v >= lo && v <= hi;
}

std::int64_t sign_extend(std::uint64_t v, int bits) {
  // The field holds v in two's complement over `bits`; the top value 2^(bits-1) is kept positive so the
  // range is symmetric around the encoder's fits().
  if (v > (std::uint64_t{1} << (bits - 1))) return static_cast<std::int64_t>(v) - (std::int64_t{1} << bits);
  return static_cast<std::int64_t>(v);
}

std::uint64_t bits_of(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

void write_varint(BitWriter& w, std::int64_t v) {
  // Zig-zag, then 7 bits a group, low group first, high bit = more.
  std::uint64_t u = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  do {
    std::uint64_t group = u & 0x7f;
    u >>= 7;
    w.write_bits(group | (u != 0 ? 0x80 : 0), 8);
  } while (u != 0);
}

bool read_varint(BitReader& r, std::int64_t& v) {
  std::uint64_t u = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    std::uint64_t group = 0;
    if (!r.read_bits(8, group)) return false;
    u |= (group & 0x7f) << shift;
    if ((group & 0x80) == 0) {
      v = static_cast<std::int64_t>(u >> 1) ^ -static_cast<std::int64_t>(u & 1);
      return true;
    }
  }
  return false;
}

}  // namespace

void BitWriter::write_bit(bool bit) {
  if (free_bits_ == 0) {
    bytes_.push_back(0);
    free_bits_ = 8;
  }
  --free_bits_;
  if (bit) bytes_.back() |= static_cast<std::uint8_t>(1u << free_bits_);
}

void BitWriter::write_bits(std::uint64_t value, int count) {
  // As many bits at a time as the last byte has room for.
  while (count > 0) {
    if (free_bits_ == 0) {
      bytes_.push_back(0);
      free_bits_ = 8;
    }
    const int n = std::min(count, free_bits_);
    const auto part = static_cast<unsigned>((value >> (count - n)) & ((1u << n) - 1));
    bytes_.back() |= static_cast<std::uint8_t>(part << (free_bits_ - n));
    free_bits_ -= n;
    count -= n;
  }
}

bool BitReader::read_bit(bool& bit) {
  if (position_ >= bytes_.size() * 8) return false;
  bit = ((bytes_[position_ / 8] >> (7 - position_ % 8)) & 1) != 0;
  ++position_;
  return true;
}

bool BitReader::read_bits(int count, std::uint64_t& value) {
  if (position_ + static_cast<std::size_t>(count) > bytes_.size() * 8) return false;
  value = 0;
  while (count > 0) {
    const int left_in_byte = 8 - static_cast<int>(position_ % 8);
    const int n = std::min(count, left_in_byte);
    const unsigned byte = bytes_[position_ / 8];
    value = (value << n) | ((byte >> (left_in_byte - n)) & ((1u << n) - 1));
    position_ += static_cast<std::size_t>(n);
    count -= n;
  }
  return true;
}

bool XorChunk::append(std::int64_t t, double value) {
  const std::uint64_t bits = bits_of(value);
  if (count_ > 0 && t <= last_t_) return false;
  if (count_ == 0) {
    write_varint(writer_, t);
    writer_.write_bits(bits, 64);
    first_t_ = t;
  } else if (count_ == 1) {
    last_delta_ = t - last_t_;
    write_varint(writer_, last_delta_);
  } else {
    const std::int64_t delta = t - last_t_;
    const std::int64_t dod = delta - last_delta_;
    last_delta_ = delta;
    if (dod == 0) {
      writer_.write_bit(false);
    } else {
      bool written = false;
      for (const auto& c : kDodClasses) {
        if (!fits(dod, c.bits)) continue;
        for (int i = 0; i < c.prefix_ones; ++i) writer_.write_bit(true);
        writer_.write_bit(false);
        writer_.write_bits(static_cast<std::uint64_t>(dod), c.bits);
        written = true;
        break;
      }
      if (!written) {
        writer_.write_bits(0xf, 4);
        writer_.write_bits(static_cast<std::uint64_t>(dod), 64);
      }
    }
  }
  if (count_ > 0) {
    const std::uint64_t x = bits ^ last_bits_;
    if (x == 0) {
      writer_.write_bit(false);
    } else {
      writer_.write_bit(true);
      // Leading zeros are capped at 31 (5 bits); the window is reused while the new bits fit in it.
      const int leading = std::min(std::countl_zero(x), 31);
      const int trailing = std::countr_zero(x);
      if (leading_ != 0xff && leading >= leading_ && trailing >= trailing_) {
        writer_.write_bit(false);
        writer_.write_bits(x >> trailing_, 64 - leading_ - trailing_);
      } else {
        writer_.write_bit(true);
        const int significant = 64 - leading - trailing;  // 1..64; 64 is written as 0 in 6 bits
        writer_.write_bits(static_cast<std::uint64_t>(leading), 5);
        writer_.write_bits(static_cast<std::uint64_t>(significant & 63), 6);
        writer_.write_bits(x >> trailing, significant);
        leading_ = leading;
        trailing_ = trailing;
      }
    }
  }
  last_bits_ = bits;
  last_t_ = t;
  ++count_;
  return true;
}

bool XorChunk::Iterator::fail(std::string what) {
  error_ = fmt::format("damaged chunk at sample {}: {}", read_ + 1, what);
  left_ = 0;
  return false;
}

double XorChunk::Iterator::value() const {
  double v;
  std::memcpy(&v, &bits_, sizeof v);
  return v;
}

bool XorChunk::Iterator::next() {
  if (left_ == 0) return false;
  if (read_ == 0) {
    if (!read_varint(reader_, t_) || !reader_.read_bits(64, bits_)) return fail("first sample cut short");
  } else {
    if (read_ == 1) {
      if (!read_varint(reader_, delta_)) return fail("second timestamp cut short");
    } else {
      int ones = 0;
      bool bit = true;
      while (ones < 4) {
        if (!reader_.read_bit(bit)) return fail("timestamp cut short");
        if (!bit) break;
        ++ones;
      }
      std::int64_t dod = 0;
      if (ones == 4) {
        std::uint64_t raw = 0;
        if (!reader_.read_bits(64, raw)) return fail("timestamp cut short");
        dod = static_cast<std::int64_t>(raw);
      } else if (ones > 0) {
        const int bits = kDodClasses[ones - 1].bits;
        std::uint64_t raw = 0;
        if (!reader_.read_bits(bits, raw)) return fail("timestamp cut short");
        dod = sign_extend(raw, bits);
      }
      delta_ += dod;
    }
    if (delta_ <= 0) return fail("timestamps do not increase");
    t_ += delta_;
    bool changed = false;
    if (!reader_.read_bit(changed)) return fail("value cut short");
    if (changed) {
      bool new_window = false;
      if (!reader_.read_bit(new_window)) return fail("value cut short");
      if (new_window) {
        std::uint64_t leading = 0, significant = 0;
        if (!reader_.read_bits(5, leading) || !reader_.read_bits(6, significant)) return fail("value cut short");
        if (significant == 0) significant = 64;
        if (leading + significant > 64) return fail("value window out of range");
        leading_ = static_cast<int>(leading);
        trailing_ = 64 - leading_ - static_cast<int>(significant);
      } else if (read_ == 1) {
        return fail("value reuses a window before one was set");
      }
      std::uint64_t x = 0;
      if (!reader_.read_bits(64 - leading_ - trailing_, x)) return fail("value cut short");
      bits_ ^= x << trailing_;
    }
  }
  ++read_;
  --left_;
  return true;
}

}  // namespace gpuscope::store

// JsonStructureScanner: finds the brackets that are outside strings in a stream of JSON bytes, 64 bytes
// at a time with SIMD compares, so the trace reader can cut the traceEvents array into whole events
// without parsing them (simdjson then parses whole events only).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuscope::trace {

// One bracket outside any string.
struct JsonBracket {
  std::size_t position;  // in the buffer given to scan()
  char byte;             // '{', '}', '[' or ']'
};

class JsonStructureScanner {
 public:
  // The scanner must be at a place outside any string (the start of a value, or just after a bracket
  // the caller stopped at).
  void reset() {
    in_string_ = 0;
    escape_carry_ = 0;
  }

  // Visits the brackets outside strings in data[begin, end), in order. `visit(JsonBracket)` returns
  // true to stop right after that bracket. Only whole 64-byte blocks are scanned unless `final` (the
  // input ends at `end`): the string/escape state is carried from one block to the next, so a later
  // call continues at the returned position. Returns where scanning stopped: one past the bracket
  // that stopped it, or the first byte not scanned.
  template <typename Visit>
  std::size_t scan(const char* data, std::size_t begin, std::size_t end, bool final, Visit&& visit);

  // True when the last block ended inside a string (an unclosed string at the end of the input).
  bool inside_string() const { return in_string_ != 0; }

 private:
  struct BlockMasks {
    std::uint64_t open;   // '{' '['
    std::uint64_t close;  // '}' ']'
  };
  // Brackets outside strings in the 64 bytes at p, updating the carried string/escape state.
  BlockMasks classify(const char* p);

  std::uint64_t in_string_ = 0;     // all ones when the previous block ended inside a string
  std::uint64_t escape_carry_ = 0;  // 1 when the previous block ended with an unescaped backslash
};

template <typename Visit>
std::size_t JsonStructureScanner::scan(const char* data, std::size_t begin, std::size_t end, bool final,
                                       Visit&& visit) {
  std::size_t pos = begin;
  char tail[64];
  while (pos < end) {
    const char* block = data + pos;
    const std::size_t available = end - pos;
    if (available < 64) {
      if (!final) return pos;
      // The last bytes, padded with spaces (which mean nothing to the scan).
      for (std::size_t i = 0; i < 64; ++i) tail[i] = i < available ? data[pos + i] : ' ';
      block = tail;
    }
    const BlockMasks masks = classify(block);
    std::uint64_t brackets = masks.open | masks.close;
    while (brackets != 0) {
      const int bit = __builtin_ctzll(brackets);
      brackets &= brackets - 1;
      if (visit(JsonBracket{pos + static_cast<std::size_t>(bit), block[bit]})) {
        // A bracket is outside any string and is not escaped: the state right after it is clean.
        in_string_ = 0;
        escape_carry_ = 0;
        return pos + static_cast<std::size_t>(bit) + 1;
      }
    }
    pos += available < 64 ? available : 64;
  }
  return pos;
}

}  // namespace gpuscope::trace

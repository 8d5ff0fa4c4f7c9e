// JsonStructureScanner: finds the brackets that are outside strings in a stream of JSON bytes, 64 bytes
// at a time with SIMD compares, so the trace reader can cut the traceEvents array into whole events
// without parsing them (simdjson then parses whole events only).
#pragma once

#include <algorithm>
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

  // What a bracket seen by scan_top_level does to the nesting depth.
  enum class Crossing {
    kOpen,            // an opening bracket at depth 0: a top-level value starts
    kClose,           // the closing bracket that returns to depth 0: it ends
    kUnmatchedClose,  // a closing bracket at depth 0 (the end of the enclosing array, or an error)
  };

  // Like scan(), but tracks the nesting depth itself in `depth` (owned by the caller, carried across
  // calls, 0 at the start of a value) and visits only the brackets that cross depth 0:
  // `visit(JsonBracket, Crossing)`. A 64-byte block whose closing brackets cannot bring the depth back
  // to 0 is skipped after two popcounts, so the brackets nested inside an event cost next to nothing.
  template <typename Visit>
  std::size_t scan_top_level(const char* data, std::size_t begin, std::size_t end, bool final, std::int64_t& depth,
                             Visit&& visit);

  // Tests: classify with the SSE2 (or plain C++) code even where AVX2 is available, or go back to the
  // run-time choice. Returns whether AVX2 is now in use. Not thread-safe: the choice is process-wide.
  static bool use_avx2(bool allowed);

  // True when the last block ended inside a string (an unclosed string at the end of the input).
  bool inside_string() const { return in_string_ != 0; }

  // The brackets outside strings in one 64-byte block, as bits (bit i: byte i).
  struct BlockMasks {
    std::uint64_t open;   // '{' '['
    std::uint64_t close;  // '}' ']'
    int opens;            // bits set in open
    int closes;           // bits set in close
  };

 private:
  // Brackets outside strings in `count` consecutive 64-byte blocks at p, into masks[0, count), updating
  // the carried string/escape state. One call (and one run-time choice of instruction set) covers a run
  // of blocks: a call per block cost as much as the classification itself.
  void classify(const char* p, std::size_t count, BlockMasks* masks);

  // Calls `on_block(block, position, masks)` for each 64-byte block of data[begin, end), the last one
  // only when `final`; on_block returns kGoOn, or where scanning stopped, which is then returned.
  // Otherwise returns the first byte not scanned. Blocks are classified kRun at a time; a stop discards
  // the state of the blocks after it, which stopped_after() makes harmless.
  static constexpr std::size_t kGoOn = static_cast<std::size_t>(-1);
  static constexpr std::size_t kRun = 16;
  template <typename OnBlock>
  std::size_t for_each_block(const char* data, std::size_t begin, std::size_t end, bool final, OnBlock&& on_block);

  // One past the bracket at `position`, where a caller stopped: a bracket is outside any string and not
  // escaped, so the state right after it is clean.
  std::size_t stopped_after(std::size_t position) {
    in_string_ = 0;
    escape_carry_ = 0;
    return position + 1;
  }

  std::uint64_t in_string_ = 0;     // all ones when the previous block ended inside a string
  std::uint64_t escape_carry_ = 0;  // 1 when the previous block ended with an unescaped backslash
};

template <typename OnBlock>
std::size_t JsonStructureScanner::for_each_block(const char* data, std::size_t begin, std::size_t end, bool final,
                                                 OnBlock&& on_block) {
  std::size_t pos = begin;
  BlockMasks masks[kRun];
  while (end - pos >= 64) {
    const std::size_t count = std::min<std::size_t>((end - pos) / 64, kRun);
    classify(data + pos, count, masks);
    for (std::size_t i = 0; i < count; ++i, pos += 64) {
      if (const std::size_t stop = on_block(data + pos, pos, masks[i]); stop != kGoOn) return stop;
    }
  }
  if (pos == end || !final) return pos;
  // The last bytes, padded with spaces (which mean nothing to the scan).
  char tail[64];
  const std::size_t available = end - pos;
  for (std::size_t i = 0; i < 64; ++i) tail[i] = i < available ? data[pos + i] : ' ';
  classify(tail, 1, masks);
  if (const std::size_t stop = on_block(tail, pos, masks[0]); stop != kGoOn) return stop;
  return end;
}

template <typename Visit>
std::size_t JsonStructureScanner::scan(const char* data, std::size_t begin, std::size_t end, bool final,
                                       Visit&& visit) {
  return for_each_block(data, begin, end, final, [&](const char* block, std::size_t pos, const BlockMasks& masks) {
    std::uint64_t brackets = masks.open | masks.close;
    while (brackets != 0) {
      const int bit = __builtin_ctzll(brackets);
      brackets &= brackets - 1;
      const std::size_t at = pos + static_cast<std::size_t>(bit);
      if (visit(JsonBracket{at, block[bit]})) return stopped_after(at);
    }
    return kGoOn;
  });
}

template <typename Visit>
std::size_t JsonStructureScanner::scan_top_level(const char* data, std::size_t begin, std::size_t end, bool final,
                                                 std::int64_t& depth, Visit&& visit) {
  std::int64_t level = depth;  // a local, so it can live in a register between visits
  const std::size_t result =
      for_each_block(data, begin, end, final, [&](const char* block, std::size_t pos, const BlockMasks& masks) {
        if (level > masks.closes) {
          // Even if every closing bracket came first, the depth would stay above 0.
          level += masks.opens - masks.closes;
          return kGoOn;
        }
        std::uint64_t brackets = masks.open | masks.close;
        while (brackets != 0) {
          const int bit = __builtin_ctzll(brackets);
          brackets &= brackets - 1;
          Crossing crossing;
          if ((masks.open >> bit) & 1) {
            if (level++ != 0) continue;
            crossing = Crossing::kOpen;
          } else if (level == 0) {
            crossing = Crossing::kUnmatchedClose;
          } else {
            if (--level != 0) continue;
            crossing = Crossing::kClose;
          }
          const std::size_t at = pos + static_cast<std::size_t>(bit);
          depth = level;
          if (visit(JsonBracket{at, block[bit]}, crossing)) return stopped_after(at);
        }
        return kGoOn;
      });
  depth = level;
  return result;
}

}  // namespace gpuscope::trace

#include "trace/json_structure_scanner.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gpuscope::trace {
namespace {

struct ByteMasks {
  std::uint64_t quote;
  std::uint64_t backslash;
  std::uint64_t open;
  std::uint64_t close;
};

#if defined(__x86_64__)
// The same with AVX2 (two 32-byte halves instead of four 16-byte quarters), chosen at run time so the
// binary still runs on CPUs without it.
__attribute__((target("avx2"))) ByteMasks byte_masks_avx2(const char* p) {
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i open = _mm256_set1_epi8('{');
  const __m256i close = _mm256_set1_epi8('}');
  const __m256i bit20 = _mm256_set1_epi8(0x20);
  ByteMasks m{0, 0, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * i));
    const __m256i folded = _mm256_or_si256(v, bit20);
    const int shift = 32 * i;
    m.quote |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote)))) << shift;
    m.backslash |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, backslash))))
                   << shift;
    m.open |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, open)))) << shift;
    m.close |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, close))))
               << shift;
  }
  return m;
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif

// '[' and ']' differ from '{' and '}' only in bit 0x20, so OR-ing it in finds both kinds with one
// compare each; no other byte maps onto '{' or '}' that way.
ByteMasks byte_masks(const char* p) {
#if defined(__x86_64__)
  if (kHaveAvx2) return byte_masks_avx2(p);
#endif
  ByteMasks m{0, 0, 0, 0};
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  const __m128i bit20 = _mm_set1_epi8(0x20);
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    const __m128i folded = _mm_or_si128(v, bit20);
    const int shift = 16 * i;
    m.quote |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)))) << shift;
    m.backslash |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash))))
                   << shift;
    m.open |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, open)))) << shift;
    m.close |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, close))))
               << shift;
  }
#else
  for (int i = 0; i < 64; ++i) {
    const char c = p[i];
    const char folded = static_cast<char>(c | 0x20);
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (c == '"') m.quote |= bit;
    if (c == '\\') m.backslash |= bit;
    if (folded == '{') m.open |= bit;
    if (folded == '}') m.close |= bit;
  }
#endif
  return m;
}

// Bit i becomes the XOR of bits 0..i: set from an opening quote up to, not including, its closing quote.
std::uint64_t running_xor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

}  // namespace

JsonStructureScanner::BlockMasks JsonStructureScanner::classify(const char* p) {
  const ByteMasks m = byte_masks(p);
  // Which bytes a backslash escapes. Backslashes are rare in traces, so a plain walk over them is
  // cheaper than anything clever; a backslash that is itself escaped escapes nothing.
  std::uint64_t escaped = escape_carry_;
  escape_carry_ = 0;
  std::uint64_t backslashes = m.backslash;
  while (backslashes != 0) {
    const int bit = __builtin_ctzll(backslashes);
    backslashes &= backslashes - 1;
    if ((escaped >> bit) & 1) continue;
    if (bit == 63) {
      escape_carry_ = 1;
    } else {
      escaped |= std::uint64_t{1} << (bit + 1);
    }
  }
  const std::uint64_t quotes = m.quote & ~escaped;
  // Set on an opening quote and the bytes inside the string, clear on the closing quote and outside.
  const std::uint64_t inside = running_xor(quotes) ^ in_string_;
  in_string_ = static_cast<std::uint64_t>(static_cast<std::int64_t>(inside) >> 63);
  return BlockMasks{m.open & ~inside, m.close & ~inside};
}

}  // namespace gpuscope::trace

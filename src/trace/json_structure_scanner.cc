#include "trace/json_structure_scanner.h"

#include <atomic>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace gpuscope::trace {
namespace {

using BlockMasks = JsonStructureScanner::BlockMasks;

// The scan is the first to read each byte of a mapped trace, and waits on memory: the hardware
// prefetcher stops at every 4 KiB page, so blocks 2 KiB ahead are asked for while this one is
// classified (the real trace: 22.5 -> 21 ms). A prefetch never faults, past the end or not.
constexpr std::size_t kPrefetchDistance = 2048;

// Which bytes a backslash escapes, carrying a trailing backslash into the next block. Backslashes are
// rare in traces, so a plain walk over them is cheaper than anything clever; a backslash that is itself
// escaped escapes nothing.
inline std::uint64_t escaped_bytes(std::uint64_t backslashes, std::uint64_t& escape_carry) {
  std::uint64_t escaped = escape_carry;
  escape_carry = 0;
  while (backslashes != 0) {
    const int bit = __builtin_ctzll(backslashes);
    backslashes &= backslashes - 1;
    if ((escaped >> bit) & 1) continue;
    if (bit == 63) {
      escape_carry = 1;
    } else {
      escaped |= std::uint64_t{1} << (bit + 1);
    }
  }
  return escaped;
}

// The brackets outside strings, and the string state carried to the next block, from the prefix XOR
// of the unescaped quotes (bit i set to the XOR of bits 0..i: set from an opening quote up to, not
// including, its closing quote).
inline BlockMasks outside_strings(std::uint64_t quotes_prefix_xor, std::uint64_t open, std::uint64_t close,
                                  std::uint64_t& in_string) {
  const std::uint64_t inside = quotes_prefix_xor ^ in_string;
  in_string = static_cast<std::uint64_t>(static_cast<std::int64_t>(inside) >> 63);
  BlockMasks out{open & ~inside, close & ~inside, 0, 0};
  out.opens = __builtin_popcountll(out.open);
  out.closes = __builtin_popcountll(out.close);
  return out;
}

// '[' and ']' differ from '{' and '}' only in bit 0x20, so OR-ing it in finds both kinds with one
// compare each; no other byte maps onto '{' or '}' that way.
inline BlockMasks classify_generic(const char* p, std::uint64_t& in_string, std::uint64_t& escape_carry) {
  std::uint64_t quote = 0, backslash = 0, open = 0, close = 0;
#if defined(__SSE2__)
  const __m128i quote_v = _mm_set1_epi8('"');
  const __m128i backslash_v = _mm_set1_epi8('\\');
  const __m128i open_v = _mm_set1_epi8('{');
  const __m128i close_v = _mm_set1_epi8('}');
  const __m128i bit20 = _mm_set1_epi8(0x20);
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    const __m128i folded = _mm_or_si128(v, bit20);
    const int shift = 16 * i;
    auto bits = [&](__m128i eq) {
      return static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(eq))) << shift;
    };
    quote |= bits(_mm_cmpeq_epi8(v, quote_v));
    backslash |= bits(_mm_cmpeq_epi8(v, backslash_v));
    open |= bits(_mm_cmpeq_epi8(folded, open_v));
    close |= bits(_mm_cmpeq_epi8(folded, close_v));
  }
#else
  for (int i = 0; i < 64; ++i) {
    const char c = p[i];
    const char folded = static_cast<char>(c | 0x20);
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (c == '"') quote |= bit;
    if (c == '\\') backslash |= bit;
    if (folded == '{') open |= bit;
    if (folded == '}') close |= bit;
  }
#endif
  std::uint64_t x = quote & ~escaped_bytes(backslash, escape_carry);
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return outside_strings(x, open, close, in_string);
}

#if defined(__x86_64__)
// One bit per byte of a 64-byte block, from the two halves' compare results.
__attribute__((target("avx2"))) inline std::uint64_t bits(__m256i eq_lo, __m256i eq_hi) {
  return static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(eq_lo))) |
         static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(eq_hi))) << 32;
}

// The same with AVX2 (two 32-byte halves), a carry-less multiply by all ones for the prefix XOR and the
// POPCNT instruction, chosen at run time so the binary still runs on CPUs without them.
__attribute__((target("avx2,pclmul,popcnt"))) inline BlockMasks classify_avx2(const char* p, std::uint64_t& in_string,
                                                                              std::uint64_t& escape_carry) {
  const __m256i quote_v = _mm256_set1_epi8('"');
  const __m256i backslash_v = _mm256_set1_epi8('\\');
  const __m256i open_v = _mm256_set1_epi8('{');
  const __m256i close_v = _mm256_set1_epi8('}');
  const __m256i bit20 = _mm256_set1_epi8(0x20);
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  const __m256i folded_lo = _mm256_or_si256(lo, bit20);
  const __m256i folded_hi = _mm256_or_si256(hi, bit20);
  const std::uint64_t quote = bits(_mm256_cmpeq_epi8(lo, quote_v), _mm256_cmpeq_epi8(hi, quote_v));
  const std::uint64_t backslash = bits(_mm256_cmpeq_epi8(lo, backslash_v), _mm256_cmpeq_epi8(hi, backslash_v));
  const std::uint64_t open = bits(_mm256_cmpeq_epi8(folded_lo, open_v), _mm256_cmpeq_epi8(folded_hi, open_v));
  const std::uint64_t close = bits(_mm256_cmpeq_epi8(folded_lo, close_v), _mm256_cmpeq_epi8(folded_hi, close_v));
  const std::uint64_t quotes = quote & ~escaped_bytes(backslash, escape_carry);
  // Carry-less multiplication by all ones: the prefix XOR in one instruction.
  const __m128i product =
      _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<long long>(quotes)), _mm_set1_epi8(-1), 0);
  return outside_strings(static_cast<std::uint64_t>(_mm_cvtsi128_si64(product)), open, close, in_string);
}
#endif

// A run of blocks with one instruction set: the per-block function is inlined into the loop.
void classify_run_generic(const char* p, std::size_t count, BlockMasks* masks, std::uint64_t& in_string,
                          std::uint64_t& escape_carry) {
  for (std::size_t i = 0; i < count; ++i) {
    __builtin_prefetch(p + 64 * i + kPrefetchDistance);
    masks[i] = classify_generic(p + 64 * i, in_string, escape_carry);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,pclmul,popcnt"))) void classify_run_avx2(const char* p, std::size_t count,
                                                                      BlockMasks* masks, std::uint64_t& in_string,
                                                                      std::uint64_t& escape_carry) {
  std::uint64_t string_state = in_string, carry = escape_carry;  // in registers across the run
  for (std::size_t i = 0; i < count; ++i) {
    __builtin_prefetch(p + 64 * i + kPrefetchDistance);
    masks[i] = classify_avx2(p + 64 * i, string_state, carry);
  }
  in_string = string_state;
  escape_carry = carry;
}

// AVX2, PCLMUL and POPCNT, with the OS saving the AVX registers, asked of the CPU itself once, on the
// first scan. __builtin_cpu_supports would link libgcc's CPU model, whose constructor runs about a
// dozen CPUID instructions in every gpuscope process, whatever the command; in a virtual machine each
// CPUID traps to the hypervisor (12 us on the development VM).
bool has_avx2() {
  static const bool supported = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    constexpr unsigned kNeeded = bit_PCLMUL | bit_POPCNT | bit_OSXSAVE | bit_AVX;
    if ((ecx & kNeeded) != kNeeded) return false;
    unsigned xcr0 = 0, xcr0_high = 0;
    __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
    if ((xcr0 & 6) != 6) return false;  // the XMM and YMM state
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (ebx & bit_AVX2) != 0;
  }();
  return supported;
}
#else
bool has_avx2() { return false; }
#endif

using ClassifyRun = void (*)(const char*, std::size_t, BlockMasks*, std::uint64_t&, std::uint64_t&);
ClassifyRun choose_classify_run(bool allow_avx2) {
#if defined(__x86_64__)
  if (allow_avx2 && has_avx2()) return classify_run_avx2;
#endif
  return classify_run_generic;
}

// The code for this CPU, chosen by the first scan (not at start-up: most commands never scan).
void classify_run_first(const char* p, std::size_t count, BlockMasks* masks, std::uint64_t& in_string,
                        std::uint64_t& escape_carry);
std::atomic<ClassifyRun> classify_run{classify_run_first};

void classify_run_first(const char* p, std::size_t count, BlockMasks* masks, std::uint64_t& in_string,
                        std::uint64_t& escape_carry) {
  const ClassifyRun chosen = choose_classify_run(true);
  ClassifyRun expected = classify_run_first;
  classify_run.compare_exchange_strong(expected, chosen, std::memory_order_relaxed);  // unless a test chose
  chosen(p, count, masks, in_string, escape_carry);
}

}  // namespace

void JsonStructureScanner::classify(const char* p, std::size_t count, BlockMasks* masks) {
  classify_run.load(std::memory_order_relaxed)(p, count, masks, in_string_, escape_carry_);
}

bool JsonStructureScanner::use_avx2(bool allowed) {
  classify_run.store(choose_classify_run(allowed), std::memory_order_relaxed);
  return allowed && has_avx2();
}

}  // namespace gpuscope::trace

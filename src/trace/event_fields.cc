#include "trace/event_fields.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace gpuscope::trace {
namespace {

// The value of the eight ASCII digits at p, or nullopt when any of the eight is not a digit: one load
// and three multiplications (pairs, then fours, then eight) instead of eight steps. Little-endian only.
std::optional<std::uint64_t> eight_digits(const char* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  // Every byte is 0x30..0x39: its high nibble is 3, and adding 6 does not carry into it.
  constexpr std::uint64_t kHigh = 0xF0F0F0F0F0F0F0F0;
  if (((v & kHigh) | (((v + 0x0606060606060606) & kHigh) >> 4)) != 0x3333333333333333) return std::nullopt;
  v -= 0x3030303030303030;
  v = v * 10 + (v >> 8);  // each 16-bit lane: the two-digit number of its bytes (low byte first)
  constexpr std::uint64_t kLanes = 0x000000FF000000FF;
  return (((v & kLanes) * (100 + (1000000ULL << 32))) + (((v >> 16) & kLanes) * (1 + (10000ULL << 32)))) >> 32;
}

}  // namespace

EventCategory category_of(std::string_view cat) {
  switch (cat.empty() ? '\0' : cat[0]) {
    case 'k':
      if (cat == "kernel") return EventCategory::kKernel;
      break;
    case 'g':
      if (cat == "gpu_memcpy") return EventCategory::kGpuMemcpy;
      if (cat == "gpu_memset") return EventCategory::kGpuMemset;
      if (cat == "gpu_user_annotation") return EventCategory::kGpuUserAnnotation;
      break;
    case 'c':
      if (cat == "cpu_op") return EventCategory::kCpuOp;
      if (cat == "cuda_runtime" || cat == "cuda_driver") return EventCategory::kCudaRuntime;
      break;
    case 'C':  // older Kineto spelled some categories in capitals
      if (cat == "Kernel") return EventCategory::kKernel;
      if (cat == "Memcpy") return EventCategory::kGpuMemcpy;
      if (cat == "Memset") return EventCategory::kGpuMemset;
      if (cat == "Runtime") return EventCategory::kCudaRuntime;
      break;
    case 'u':
      if (cat == "user_annotation") return EventCategory::kUserAnnotation;
      break;
    case 'p':
      if (cat == "python_function") return EventCategory::kPythonFunction;
      break;
    default:
      break;
  }
  return EventCategory::kOther;
}

std::size_t json_number_length(std::string_view text) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - from;
  };
  if (i < text.size() && text[i] == '-') ++i;
  const std::size_t whole = i;
  const std::size_t whole_digits = digits();
  if (whole_digits == 0 || (text[whole] == '0' && whole_digits > 1)) return 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (digits() == 0) return 0;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return 0;
  }
  return i;
}

std::optional<std::int64_t> integer_value(std::string_view token) {
  std::int64_t v = 0;
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, v);
  if (ec == std::errc{} && (ptr == end || is_json_space(*ptr) || *ptr == ',' || *ptr == '}' || *ptr == ']')) return v;
  double d = 0;
  auto [dptr, dec] = std::from_chars(token.data(), end, d);
  if (dec != std::errc{} || !std::isfinite(d) || std::fabs(d) > 9.2e18) return std::nullopt;
  (void)dptr;
  return static_cast<std::int64_t>(std::llround(d));
}

std::optional<std::int64_t> microseconds_text_to_ns(std::string_view text) {
  // The largest whole part whose nanoseconds still fit in an int64 (the fraction is checked at the end).
  constexpr std::uint64_t kMaxWhole = std::numeric_limits<std::int64_t>::max() / 1000;
  std::size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  const std::size_t digits_begin = i;
  std::uint64_t whole = 0;
  if constexpr (std::endian::native == std::endian::little) {
    // Kineto's timestamps have 16 digits: two steps of eight. (whole < 10^8 keeps the step in range.)
    while (text.size() - i >= 8 && whole < 100'000'000) {
      const auto eight = eight_digits(text.data() + i);
      if (!eight) break;
      whole = whole * 100'000'000 + *eight;
      i += 8;
    }
  }
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (whole > kMaxWhole / 10) return std::nullopt;
    whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
    ++i;
  }
  if (i == digits_begin || whole > kMaxWhole) return std::nullopt;
  std::int64_t fraction_ns = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t fraction_begin = i;
    std::int64_t scale = 100;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      fraction_ns += (text[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == fraction_begin) return std::nullopt;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    // Rare (some exporters): go through a double, which is exact enough for an exponent form.
    double d = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (ec != std::errc{} || !std::isfinite(d) || std::fabs(d) > 9.2e15) return std::nullopt;
    (void)ptr;
    return static_cast<std::int64_t>(std::llround(d * 1000.0));
  }
  std::int64_t ns = 0;
  if (__builtin_add_overflow(static_cast<std::int64_t>(whole) * 1000, fraction_ns, &ns)) return std::nullopt;
  return negative ? -ns : ns;
}

}  // namespace gpuscope::trace

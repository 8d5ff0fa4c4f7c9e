// gpuscope_events.h: a C++ training loop tells the gpuscope agent on its node about its steps and
// epochs (the wire protocol is clients/README.md: JSON lines in Unix datagrams, fire-and-forget).
//
// One self-contained header: C++17, POSIX sockets and the standard library, nothing to link. Linux.
//
// The promise: monitoring never slows or breaks training. Every call
//   - never blocks: the socket is non-blocking and each event is one sendmsg(MSG_DONTWAIT) of one
//     datagram, nothing waits on the agent, nothing retries in a loop, no thread is started; the one
//     lock (over the deferred events, below) is only ever try_lock()ed, never waited for;
//   - never throws and never aborts (all of it is noexcept; a failure is a counter, not an error);
//   - allocates nothing: an event is formatted into a stack buffer with std::to_chars (no locale, no
//     iostreams), and deferred events wait in a fixed buffer inside the Client;
//   - defers the event when the agent's queue is full (EAGAIN: the kernel queues at most
//     net.unix.max_dgram_qlen datagrams, 10 by default, whatever the buffer size, so ranks that step
//     together overflow it): it waits in the Client, up to kMaxPendingBytes of whole events, and goes out
//     with the next event, as one datagram of JSON lines (the deferred ones first, oldest first), or at
//     flush(). When the pending events would outgrow that bound, the oldest are dropped (an event of
//     kMaxPendingBytes or more cannot wait: it is dropped at once);
//   - drops the event, and counts it in stats(), when no agent listens (ENOENT, ECONNREFUSED; the pending
//     events with it), when it is lost to a full queue (above) or when the event would be over the
//     protocol's 4096 bytes. Without an agent a call costs no system call at all: the client tries to
//     reach the agent again at most once per reconnect_interval (1 s), so the agent may start after the
//     job and is found within a second.
//
// Threads: one Client may be used from any number of threads at once. Each call formats on its own stack
// and hands the kernel one datagram (the kernel keeps datagrams whole); the shared state is a file
// descriptor, atomic counters and the pending events, and only one thread at a time wins the right to
// reconnect. The pending events belong to whichever thread takes their mutex with try_lock(); a thread
// that finds it taken sends its own event alone, and drops it (buffer_full) if the queue is full. Used
// from one thread, a Client delivers events in the order they were sent; while threads contend for the
// pending events, an event sent alone may overtake deferred ones.
//
// fork(): the child inherits the connected socket and may keep using the Client (for example a data
// loader worker); the agent learns the sending pid from the kernel, so the child's events are the
// child's. The pending events belong to the process that deferred them: a child starts with none (its
// parent still sends its own) and with a fresh mutex, so a lock held by one of the parent's threads at
// the fork is never inherited. Each process counts its own stats() from the moment of the fork (starting
// from the parent's counts). exec() closes the socket (SOCK_CLOEXEC).
//
// At the end of training, flush() sends what is still pending (the destructor tries that once too).
//
//   gpuscope::events::Client gpuscope("llama-ft");            // rank etc. from torchrun's RANK, WORLD_SIZE, LOCAL_RANK
//   for (std::uint64_t step = 0; step < steps; ++step) {
//     auto timer = gpuscope.time_step(step);                   // sends {"event":"step",...} when it goes out of scope
//     timer.set_loss(train_one_batch());
//   }
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace gpuscope::events {

// The protocol's limit on one event, in bytes (clients/README.md).
inline constexpr std::size_t kMaxEventBytes = 4096;
// How many bytes of deferred events (whole JSON lines, each with its newline) a Client keeps while the
// agent's queue is full. They go out with the next event, so a datagram holds at most
// kMaxPendingBytes + kMaxEventBytes = 8 KiB (the agent reads up to 16 KiB).
inline constexpr std::size_t kMaxPendingBytes = 4096;

// Where an agent listens, in the order a client looks, after $GPUSCOPE_EVENTS_SOCKET. (The agent's own
// $RUNTIME_DIRECTORY under systemd is /run/gpuscope, the first of these.)
inline constexpr const char* kSystemSocketPath = "/run/gpuscope/events.sock";
inline constexpr const char* kUserSocketSuffix = "/gpuscope/events.sock";  // under $XDG_RUNTIME_DIR

// One named number sent with a step, e.g. {"lr", 3e-4}. The agent takes up to 32 per step, named
// [a-zA-Z_][a-zA-Z0-9_]* (at most 64 characters); a step that breaks this is rejected by the agent (and
// counted there, in gpuscope_events_rejected_total). A value that is not finite is left out.
struct Scalar {
  std::string_view name;
  double value = 0;
};

// The caching allocator's bytes at an epoch boundary, as PyTorch names them: memory_allocated(),
// memory_reserved(), max_memory_allocated() (or c10::cuda::CUDACachingAllocator's stats). Each optional.
struct AllocatorBytes {
  std::optional<std::uint64_t> allocated;
  std::optional<std::uint64_t> reserved;
  std::optional<std::uint64_t> peak_allocated;
};

struct ClientOptions {
  // The process's place in the job. Unset: torchrun's environment ($RANK, $WORLD_SIZE, $LOCAL_RANK),
  // read once by the constructor; without those, rank 0 and no world size or local rank.
  std::optional<unsigned> rank;
  std::optional<unsigned> world_size;
  std::optional<unsigned> local_rank;
  // The GPU this rank runs on, by its index or its UUID ("GPU-…", wins over the index). Neither: the
  // agent finds the GPU the process holds memory on.
  std::optional<unsigned> gpu_index;
  std::string gpu_uuid;
  // The agent's socket. Empty: $GPUSCOPE_EVENTS_SOCKET, then /run/gpuscope/events.sock, then
  // $XDG_RUNTIME_DIR/gpuscope/events.sock, the first one an agent answers on. Set: that path only.
  std::string socket_path;
  // Each event carries the Unix time it happened. false: the agent stamps it on arrival.
  bool send_time = true;
  // How often, at most, a client without an agent tries to reach it again.
  std::chrono::milliseconds reconnect_interval{1000};
};

// What became of the events so far (this process's, since construction or fork).
struct ClientStats {
  std::uint64_t sent = 0;          // handed to the kernel for the agent (deferred ones included)
  std::uint64_t deferred = 0;      // of sent: refused once by a full queue, sent later with another event
  std::uint64_t pending = 0;       // deferred now, not sent yet (neither sent nor dropped)
  std::uint64_t unreachable = 0;   // dropped: no agent listens at any socket path (or it went away)
  std::uint64_t buffer_full = 0;   // dropped: the agent's queue was full and the pending buffer could not hold it
  std::uint64_t too_large = 0;     // dropped: over kMaxEventBytes
  std::uint64_t not_finite = 0;    // dropped: a step whose duration was NaN or infinite (JSON has no word for it)
  std::uint64_t connect_attempts = 0;  // times the client tried to reach the agent (rate limited)

  std::uint64_t dropped() const noexcept { return unreachable + buffer_full + too_large + not_finite; }
};

class Client;

// Times one step from its construction to its end (steady_clock) and sends it then, with the loss if
// one was set. From Client::time_step(); ends when it goes out of scope, or at stop().
class StepTimer {
 public:
  StepTimer(StepTimer&& other) noexcept
      : client_(std::exchange(other.client_, nullptr)), step_(other.step_), start_(other.start_), loss_(other.loss_) {}
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  StepTimer& operator=(StepTimer&&) = delete;
  ~StepTimer() { stop(); }

  void set_loss(double loss) noexcept { loss_ = loss; }
  // Ends the step now and sends it; later calls, and the destructor, do nothing.
  void stop() noexcept;
  // The step is not sent (an aborted or skipped step).
  void cancel() noexcept { client_ = nullptr; }
  double elapsed_s() const noexcept {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  friend class Client;
  StepTimer(Client* client, std::uint64_t step) noexcept
      : client_(client), step_(step), start_(std::chrono::steady_clock::now()) {}

  Client* client_;
  std::uint64_t step_;
  std::chrono::steady_clock::time_point start_;
  double loss_ = std::numeric_limits<double>::quiet_NaN();  // NaN: none (a loss that is not finite is left out anyway)
};

namespace detail {

// A bounded writer over a caller's buffer: what does not fit sets overflow() and is not written.
class EventWriter {
 public:
  EventWriter(char* begin, std::size_t capacity) noexcept : begin_(begin), p_(begin), end_(begin + capacity) {}

  void put(char c) noexcept {
    if (p_ == end_) {
      overflow_ = true;
      return;
    }
    *p_++ = c;
  }
  void put(std::string_view s) noexcept {
    if (static_cast<std::size_t>(end_ - p_) < s.size()) {
      overflow_ = true;
      return;
    }
    if (!s.empty()) std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }
  void put_uint(std::uint64_t v) noexcept {
    auto [next, ec] = std::to_chars(p_, end_, v);
    if (ec != std::errc()) {
      overflow_ = true;
      return;
    }
    p_ = next;
  }
  void put_double(double v) noexcept;  // finite values only

  bool overflow() const noexcept { return overflow_; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(p_ - begin_); }
  const char* data() const noexcept { return begin_; }

 private:
  char* begin_;
  char* p_;
  char* end_;
  bool overflow_ = false;
};

// Appends to a std::string; only used at construction (the job's name, the GPU's UUID).
class StringWriter {
 public:
  explicit StringWriter(std::string& out) noexcept : out_(out) {}
  void put(char c) { out_.push_back(c); }
  void put(std::string_view s) { out_.append(s.data(), s.size()); }
  void put_uint(std::uint64_t v) {
    char digits[24];
    auto [next, ec] = std::to_chars(digits, digits + sizeof digits, v);
    (void)ec;  // 24 characters hold every uint64_t
    out_.append(digits, next);
  }

 private:
  std::string& out_;
};

// The length of the well-formed UTF-8 sequence at s[i], or 0 when it is not one (overlong forms,
// surrogates and code points past U+10FFFF are not).
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

// s as a JSON string, quotes included: '"' and '\' escaped, control characters as \n, \t, ... or
// \u00XX, UTF-8 passed through, and a byte that is not UTF-8 replaced by U+FFFD so that the agent's
// parser always gets valid JSON.
template <class Writer>
void put_json_string(Writer& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.put('"');
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence_length(s, i);
      if (n == 0) {
        out.put("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER
        ++i;
      } else {
        out.put(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out.put("\\\""); break;
      case '\\': out.put("\\\\"); break;
      case '\b': out.put("\\b"); break;
      case '\f': out.put("\\f"); break;
      case '\n': out.put("\\n"); break;
      case '\r': out.put("\\r"); break;
      case '\t': out.put("\\t"); break;
      default:
        if (c < 0x20) {
          const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
          out.put(std::string_view(escaped, sizeof escaped));
        } else {
          out.put(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.put('"');
}

// A finite double as a JSON number with 9 significant digits ("5.12e-1"), by integer arithmetic: for
// standard libraries without std::to_chars(double) (libstdc++ before GCC 11, older libc++), where
// snprintf would follow LC_NUMERIC and could write "0,512".
inline std::size_t format_double_portable(char* out, double v) noexcept {  // out: at least 32 chars
  char* p = out;
  if (std::signbit(v)) {
    *p++ = '-';
    v = -v;
  }
  if (v < 1e-300) {  // zero and the subnormal range: no training number lives there
    *p++ = '0';
    return static_cast<std::size_t>(p - out);
  }
  int exponent = static_cast<int>(std::floor(std::log10(v)));
  auto mantissa = static_cast<std::uint64_t>(std::llround(v * std::pow(10.0, 8 - exponent)));
  if (mantissa >= 1000000000ULL) {  // log10 rounded up across a power of ten, or the digits carried
    ++exponent;
    mantissa = static_cast<std::uint64_t>(std::llround(v * std::pow(10.0, 8 - exponent)));
  } else if (mantissa < 100000000ULL) {
    --exponent;
    mantissa = static_cast<std::uint64_t>(std::llround(v * std::pow(10.0, 8 - exponent)));
  }
  char digits[16] = {};
  auto [digits_end, ec] = std::to_chars(digits, digits + sizeof digits, mantissa);
  (void)ec;
  while (digits_end > digits + 1 && digits_end[-1] == '0') --digits_end;  // 5.12, not 5.12000000
  *p++ = digits[0];
  if (digits_end > digits + 1) {
    *p++ = '.';
    for (const char* d = digits + 1; d < digits_end; ++d) *p++ = *d;
  }
  if (exponent != 0) {
    *p++ = 'e';
    p = std::to_chars(p, p + 8, exponent).ptr;
  }
  return static_cast<std::size_t>(p - out);
}

inline void EventWriter::put_double(double v) noexcept {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  // The shortest text that reads back as the same double; no locale.
  auto [next, ec] = std::to_chars(p_, end_, v);
  if (ec != std::errc()) {
    overflow_ = true;
    return;
  }
  p_ = next;
#else
  char text[32];
  put(std::string_view(text, format_double_portable(text, v)));
#endif
}

// A rank, world size or local rank from the environment: a whole decimal number, else nothing.
inline std::optional<unsigned> unsigned_from_env(const char* name) noexcept {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  const char* end = text + std::strlen(text);
  unsigned value = 0;
  auto [next, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || next != end || next == text) return std::nullopt;
  return value;
}

inline std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace detail

class Client {
 public:
  // job: the training job's name (1 to 128 characters, no control characters: the agent rejects other
  // names, and counts them). Tries to reach the agent once, now; never fails: without an agent the
  // events are dropped and counted until one appears.
  explicit Client(std::string_view job, ClientOptions options = {}) noexcept
      : reconnect_interval_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(options.reconnect_interval).count()),
        send_time_(options.send_time) {
#if defined(__cpp_exceptions)
    try {
      build_identity(job, options);
      resolve_socket_paths(options.socket_path);
    } catch (...) {  // std::bad_alloc: a client that reaches nobody, rather than an exception in training
      socket_paths_count_ = 0;
    }
#else
    build_identity(job, options);
    resolve_socket_paths(options.socket_path);
#endif
    next_attempt_ns_.store(detail::steady_now_ns() + reconnect_interval_ns_, std::memory_order_relaxed);
    connect_now();
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client() {
    flush();  // one non-blocking try: what the agent's queue still refuses is lost
    const int fd = fd_.load(std::memory_order_relaxed);
    if (fd >= 0) ::close(fd);
  }

  // One training step: its number (≥ 0), its wall time in seconds (> 0; a duration that is not finite
  // drops the step), its loss (left out when absent or not finite) and a few named scalars, as a braced
  // list ({{"lr", 3e-4}, {"grad_norm", 1.2}}) or any contiguous container of Scalar (std::vector,
  // std::array).
  void step(std::uint64_t step, double duration_s, std::optional<double> loss = std::nullopt) noexcept {
    send_step(step, duration_s, loss, nullptr, 0);
  }
  void step(std::uint64_t step, double duration_s, std::optional<double> loss,
            std::initializer_list<Scalar> scalars) noexcept {
    send_step(step, duration_s, loss, scalars.begin(), scalars.size());
  }
  template <class Scalars, class = std::enable_if_t<std::is_convertible_v<
                               decltype(std::declval<const Scalars&>().data()), const Scalar*>>>
  void step(std::uint64_t step, double duration_s, std::optional<double> loss, const Scalars& scalars) noexcept {
    send_step(step, duration_s, loss, scalars.data(), scalars.size());
  }

  // Times a step and sends it when the returned timer goes out of scope (or at its stop()).
  [[nodiscard]] StepTimer time_step(std::uint64_t step) noexcept { return StepTimer(this, step); }

  void epoch_start(std::uint64_t epoch, const AllocatorBytes& memory = {}) noexcept {
    if (!reachable()) return;
    char buffer[kMaxEventBytes];
    detail::EventWriter out(buffer, sizeof buffer);
    begin_event(out, "epoch_start");
    put_epoch(out, epoch, memory);
    out.put('}');
    transmit(out);
  }

  void epoch_end(std::uint64_t epoch, std::optional<double> loss = std::nullopt,
                 const AllocatorBytes& memory = {}) noexcept {
    if (!reachable()) return;
    char buffer[kMaxEventBytes];
    detail::EventWriter out(buffer, sizeof buffer);
    begin_event(out, "epoch_end");
    put_epoch(out, epoch, memory);
    put_loss(out, loss);
    out.put('}');
    transmit(out);
  }

  // Sends the deferred events now, in one datagram, without the next event. Never waits: when the
  // agent's queue is still full (or another thread holds the pending events) they stay pending. Returns
  // whether none is left pending (sent, or dropped because the agent is gone). Call it at the end of
  // training; the destructor tries once too.
  bool flush() noexcept {
    if (pending_events_.load(std::memory_order_acquire) == 0) return true;
    std::unique_lock<std::mutex> lock = lock_pending();
    if (!lock.owns_lock()) return false;
    if (pending_size_ == 0) return true;
    // Without its last newline: every datagram ends with an event.
    if (send_datagram(pending_, pending_size_ - 1, nullptr, 0) >= 0) {
      pending_sent();
      return true;
    }
    const int error = errno;
    if (error == EAGAIN || error == EWOULDBLOCK || error == ENOBUFS) return false;
    if (error == EMSGSIZE) {
      drop_pending(stats_.too_large);
      return true;
    }
    connected_.store(false, std::memory_order_release);
    drop_pending(stats_.unreachable);
    return true;
  }

  ClientStats stats() const noexcept {
    ClientStats s;
    s.sent = stats_.sent.load(std::memory_order_relaxed);
    s.deferred = stats_.deferred.load(std::memory_order_relaxed);
    // A forked child's pending events are its parent's until it first touches them.
    s.pending = pending_owner_.load(std::memory_order_acquire) == ::getpid()
                    ? pending_events_.load(std::memory_order_relaxed)
                    : 0;
    s.unreachable = stats_.unreachable.load(std::memory_order_relaxed);
    s.buffer_full = stats_.buffer_full.load(std::memory_order_relaxed);
    s.too_large = stats_.too_large.load(std::memory_order_relaxed);
    s.not_finite = stats_.not_finite.load(std::memory_order_relaxed);
    s.connect_attempts = stats_.connect_attempts.load(std::memory_order_relaxed);
    return s;
  }
  std::uint64_t dropped() const noexcept { return stats().dropped(); }
  // Whether the last attempt reached an agent (a hint: the agent may have gone since).
  bool connected() const noexcept { return connected_.load(std::memory_order_relaxed); }

 private:
  void send_step(std::uint64_t step, double duration_s, std::optional<double> loss, const Scalar* scalars,
                 std::size_t scalar_count) noexcept {
    if (!std::isfinite(duration_s)) {
      stats_.not_finite.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (!reachable()) return;
    char buffer[kMaxEventBytes];
    detail::EventWriter out(buffer, sizeof buffer);
    begin_event(out, "step");
    out.put(",\"step\":");
    out.put_uint(step);
    out.put(",\"duration_s\":");
    out.put_double(duration_s);
    put_loss(out, loss);
    bool any_scalar = false;
    for (std::size_t i = 0; i < scalar_count; ++i) {
      if (!std::isfinite(scalars[i].value)) continue;
      out.put(any_scalar ? "," : ",\"scalars\":{");
      any_scalar = true;
      detail::put_json_string(out, scalars[i].name);
      out.put(':');
      out.put_double(scalars[i].value);
    }
    if (any_scalar) out.put('}');
    out.put('}');
    transmit(out);
  }

  struct AtomicStats {
    std::atomic<std::uint64_t> sent{0}, deferred{0}, unreachable{0}, buffer_full{0}, too_large{0},
        not_finite{0}, connect_attempts{0};
  };
  static constexpr std::size_t kMaxSocketPaths = 3;

  void build_identity(std::string_view job, const ClientOptions& options) {
    const std::optional<unsigned> rank = options.rank ? options.rank : detail::unsigned_from_env("RANK");
    const std::optional<unsigned> world_size =
        options.world_size ? options.world_size : detail::unsigned_from_env("WORLD_SIZE");
    const std::optional<unsigned> local_rank =
        options.local_rank ? options.local_rank : detail::unsigned_from_env("LOCAL_RANK");
    detail::StringWriter out(identity_);
    out.put(",\"job\":");
    detail::put_json_string(out, job);
    out.put(",\"rank\":");
    out.put_uint(rank.value_or(0));
    if (world_size) {
      out.put(",\"world_size\":");
      out.put_uint(*world_size);
    }
    if (local_rank) {
      out.put(",\"local_rank\":");
      out.put_uint(*local_rank);
    }
    if (!options.gpu_uuid.empty()) {
      out.put(",\"gpu\":");
      detail::put_json_string(out, options.gpu_uuid);
    } else if (options.gpu_index) {
      out.put(",\"gpu\":");
      out.put_uint(*options.gpu_index);
    }
  }

  void resolve_socket_paths(const std::string& explicit_path) {
    const auto add = [this](std::string path) {
      if (!path.empty() && path.size() < sizeof(sockaddr_un::sun_path) && socket_paths_count_ < kMaxSocketPaths) {
        socket_paths_[socket_paths_count_++] = std::move(path);
      }
    };
    if (!explicit_path.empty()) {
      add(explicit_path);
      return;
    }
    if (const char* env = std::getenv("GPUSCOPE_EVENTS_SOCKET")) add(env);
    add(kSystemSocketPath);
    if (const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR"); runtime_dir != nullptr && *runtime_dir != '\0') {
      add(std::string(runtime_dir) + kUserSocketSuffix);
    }
  }

  void begin_event(detail::EventWriter& out, std::string_view event) const noexcept {
    out.put("{\"event\":\"");
    out.put(event);
    out.put('"');
    out.put(identity_);
    if (send_time_) {
      // Unix seconds with microseconds, written as integers: 1732712345.123456.
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
      const auto positive = static_cast<std::uint64_t>(us < 0 ? 0 : us);
      out.put(",\"time\":");
      out.put_uint(positive / 1000000);
      char fraction[7] = {'.', '0', '0', '0', '0', '0', '0'};
      std::uint64_t rest = positive % 1000000;
      for (int i = 6; i >= 1; --i, rest /= 10) fraction[i] = static_cast<char>('0' + rest % 10);
      out.put(std::string_view(fraction, sizeof fraction));
    }
  }

  static void put_loss(detail::EventWriter& out, std::optional<double> loss) noexcept {
    if (loss && std::isfinite(*loss)) {
      out.put(",\"loss\":");
      out.put_double(*loss);
    }
  }

  static void put_epoch(detail::EventWriter& out, std::uint64_t epoch, const AllocatorBytes& memory) noexcept {
    out.put(",\"epoch\":");
    out.put_uint(epoch);
    const auto put_bytes = [&out](std::string_view key, const std::optional<std::uint64_t>& bytes) {
      if (!bytes) return;
      out.put(key);
      out.put_uint(*bytes);
    };
    put_bytes(",\"allocated_bytes\":", memory.allocated);
    put_bytes(",\"reserved_bytes\":", memory.reserved);
    put_bytes(",\"peak_allocated_bytes\":", memory.peak_allocated);
  }

  // Whether to format and send now: connected, or the rate limit lets this call try again and it worked.
  // Without an agent this is one clock read (vDSO, no system call) and a counter.
  bool reachable() noexcept {
    if (connected_.load(std::memory_order_acquire) || reconnect_if_due()) return true;
    stats_.unreachable.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  bool reconnect_if_due() noexcept {
    const std::int64_t now = detail::steady_now_ns();
    std::int64_t due = next_attempt_ns_.load(std::memory_order_relaxed);
    if (now < due) return false;
    // One thread wins the attempt; the others drop their event rather than wait for it.
    if (!next_attempt_ns_.compare_exchange_strong(due, now + reconnect_interval_ns_, std::memory_order_relaxed)) {
      return false;
    }
    return connect_now();
  }

  bool connect_now() noexcept {
    if (socket_paths_count_ == 0) return false;
    stats_.connect_attempts.fetch_add(1, std::memory_order_relaxed);
    int fd = fd_.load(std::memory_order_acquire);
    if (fd < 0) {
      fd = open_socket();
      if (fd < 0) return false;
      int none = -1;
      if (!fd_.compare_exchange_strong(none, fd, std::memory_order_acq_rel)) {
        ::close(fd);
        fd = none;
      }
    }
    for (std::size_t i = 0; i < socket_paths_count_; ++i) {
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      std::memcpy(address.sun_path, socket_paths_[i].c_str(), socket_paths_[i].size() + 1);
      // A datagram connect() is a path lookup and a permission check: it never waits on the agent.
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
        connected_.store(true, std::memory_order_release);
        return true;
      }
    }
    connected_.store(false, std::memory_order_release);
    return false;
  }

  static int open_socket() noexcept {
#if defined(SOCK_NONBLOCK) && defined(SOCK_CLOEXEC)
    return ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
#else
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd >= 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    return fd;
#endif
  }

  void transmit(const detail::EventWriter& out) noexcept {
    if (out.overflow()) {
      stats_.too_large.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const char* const event = out.data();
    const std::size_t size = out.size();
    // Held while this call owns the pending events: from the start when there are some (they go first,
    // in the same datagram), or from a refusal on (this event joins them).
    std::unique_lock<std::mutex> lock;
    if (pending_events_.load(std::memory_order_acquire) != 0) lock = lock_pending();
    // A second try only after the agent went away and a reconnect (within the rate limit) found it again,
    // e.g. restarted: the event is not lost to the restart.
    int attempt = 0;
    while (attempt < 2) {
      const std::size_t carried = lock.owns_lock() ? pending_size_ : 0;
      if (send_datagram(pending_, carried, event, size) >= 0) {
        if (carried != 0) pending_sent();
        stats_.sent.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK || error == ENOBUFS) {
        // The agent's queue is full: keep the event for the next one, unless another thread holds the
        // pending events (then it is lost rather than waited for).
        if (!lock.owns_lock()) lock = lock_pending();
        if (lock.owns_lock()) {
          defer(event, size);
        } else {
          stats_.buffer_full.fetch_add(1, std::memory_order_relaxed);
        }
        return;
      }
      if (error == EMSGSIZE) {
        if (carried != 0) {  // a socket whose send buffer is below 8 KiB: the event alone may still go
          drop_pending(stats_.too_large);
          continue;
        }
        stats_.too_large.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      // ECONNREFUSED, ENOTCONN, ECONNRESET, EPIPE, ...: the agent is gone (it stopped, or restarted and
      // bound a new socket at the same path), and the events it refused went with it.
      connected_.store(false, std::memory_order_release);
      if (carried != 0) drop_pending(stats_.unreachable);
      if (attempt++ == 0 && reconnect_if_due()) continue;
      break;
    }
    stats_.unreachable.fetch_add(1, std::memory_order_relaxed);
  }

  // The pending events, for this thread, or an empty lock when another thread holds them. Never waits.
  std::unique_lock<std::mutex> lock_pending() noexcept {
    const pid_t self = ::getpid();
    pid_t owner = pending_owner_.load(std::memory_order_acquire);
    if (owner != self) {
      // The first call in a forked child: the events pending in the copy are the parent's (it sends them
      // itself), and the mutex may have been copied locked by a parent's thread that does not exist here.
      // One thread of the child resets both (-self marks it busy); the others send alone meanwhile.
      if (owner == -self ||
          !pending_owner_.compare_exchange_strong(owner, -self, std::memory_order_acq_rel, std::memory_order_acquire)) {
        return {};
      }
      ::new (static_cast<void*>(&pending_mutex_)) std::mutex();  // the old one is never unlocked: no destructor
      pending_size_ = 0;
      pending_events_.store(0, std::memory_order_relaxed);
      pending_owner_.store(self, std::memory_order_release);
    }
    return std::unique_lock<std::mutex>(pending_mutex_, std::try_to_lock);
  }

  // The pending events' mutex held: keeps the event as one more line, dropping the oldest ones it would
  // not fit beside.
  void defer(const char* event, std::size_t size) noexcept {
    if (size + 1 > kMaxPendingBytes) {
      stats_.buffer_full.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::uint64_t count = pending_events_.load(std::memory_order_relaxed);
    while (pending_size_ + size + 1 > kMaxPendingBytes) {
      const auto* newline = static_cast<const char*>(std::memchr(pending_, '\n', pending_size_));
      const std::size_t oldest = static_cast<std::size_t>(newline - pending_) + 1;  // every line ends with one
      std::memmove(pending_, pending_ + oldest, pending_size_ - oldest);
      pending_size_ -= oldest;
      --count;
      stats_.buffer_full.fetch_add(1, std::memory_order_relaxed);
    }
    std::memcpy(pending_ + pending_size_, event, size);
    pending_[pending_size_ + size] = '\n';
    pending_size_ += size + 1;
    pending_events_.store(count + 1, std::memory_order_release);
  }

  // The pending events' mutex held: they went out.
  void pending_sent() noexcept {
    const std::uint64_t count = pending_events_.load(std::memory_order_relaxed);
    stats_.sent.fetch_add(count, std::memory_order_relaxed);
    stats_.deferred.fetch_add(count, std::memory_order_relaxed);
    pending_size_ = 0;
    pending_events_.store(0, std::memory_order_release);
  }

  // The pending events' mutex held: they are lost, counted in `counter`.
  void drop_pending(std::atomic<std::uint64_t>& counter) noexcept {
    counter.fetch_add(pending_events_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    pending_size_ = 0;
    pending_events_.store(0, std::memory_order_release);
  }

  // One datagram: `first` (the pending events, newline-terminated lines; may be empty) then `second`.
  ssize_t send_datagram(const char* first, std::size_t first_size, const char* second,
                        std::size_t second_size) noexcept {
#if defined(MSG_NOSIGNAL)
    constexpr int kFlags = MSG_DONTWAIT | MSG_NOSIGNAL;
#else
    constexpr int kFlags = MSG_DONTWAIT;
#endif
    const int fd = fd_.load(std::memory_order_acquire);
    iovec parts[2];
    std::size_t count = 0;
    if (first_size != 0) parts[count++] = {const_cast<char*>(first), first_size};
    if (second_size != 0) parts[count++] = {const_cast<char*>(second), second_size};
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = count;
    ssize_t n;
    do {  // MSG_DONTWAIT: the kernel never sleeps here, so EINTR cannot repeat
      n = ::sendmsg(fd, &message, kFlags);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  friend class StepTimer;

  // Fixed at construction: `,"job":…,"rank":…[,"world_size":…][,"local_rank":…][,"gpu":…]`.
  std::string identity_;
  std::string socket_paths_[kMaxSocketPaths];
  std::size_t socket_paths_count_ = 0;
  const std::int64_t reconnect_interval_ns_;
  const bool send_time_;

  std::atomic<int> fd_{-1};
  std::atomic<bool> connected_{false};
  std::atomic<std::int64_t> next_attempt_ns_{0};  // steady clock: when a disconnected client may try again
  AtomicStats stats_;

  // The events deferred while the agent's queue was full: whole JSON lines, each ending in '\n',
  // pending_size_ bytes of pending_. pending_size_ and pending_ only under pending_mutex_ (try_lock);
  // pending_events_ (their number) is also read without it, as a hint and for stats().
  std::mutex pending_mutex_;
  std::atomic<pid_t> pending_owner_{::getpid()};  // the process they belong to; -pid: being reset by it
  std::atomic<std::uint64_t> pending_events_{0};
  std::size_t pending_size_ = 0;
  char pending_[kMaxPendingBytes];
};

inline void StepTimer::stop() noexcept {
  Client* client = std::exchange(client_, nullptr);
  if (client == nullptr) return;
  client->step(step_, elapsed_s(), loss_);
}

}  // namespace gpuscope::events

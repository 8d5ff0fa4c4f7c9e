#include "trace/gzip_inflater.h"

#include <dlfcn.h>
#include <isa-l/igzip_lib.h>  // the struct and constants only: the functions come from dlopen
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <limits>

namespace gpuscope::trace {
namespace {

constexpr std::size_t kMaxStep = std::numeric_limits<std::uint32_t>::max() / 2;  // both libraries count in 32 bits

struct IgzipApi {
  void (*init)(inflate_state*) = nullptr;
  void (*reset)(inflate_state*) = nullptr;
  int (*inflate)(inflate_state*) = nullptr;
};

// libisal's inflate functions, opened once; null when the library or a function is missing.
const IgzipApi* igzip_api() {
  static const IgzipApi* api = []() -> const IgzipApi* {
    void* handle = ::dlopen("libisal.so.2", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return nullptr;
    static IgzipApi loaded;
    loaded.init = reinterpret_cast<void (*)(inflate_state*)>(::dlsym(handle, "isal_inflate_init"));
    loaded.reset = reinterpret_cast<void (*)(inflate_state*)>(::dlsym(handle, "isal_inflate_reset"));
    loaded.inflate = reinterpret_cast<int (*)(inflate_state*)>(::dlsym(handle, "isal_inflate"));
    if (loaded.init == nullptr || loaded.reset == nullptr || loaded.inflate == nullptr) {
      ::dlclose(handle);
      return nullptr;
    }
    return &loaded;
  }();
  return api;
}

std::atomic<bool> igzip_allowed{true};

const char* igzip_error(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid distance too far back";
    case ISAL_INVALID_WRAPPER: return "not a gzip member header";
    case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
    case ISAL_INCORRECT_CHECKSUM: return "CRC or length does not match the data";
    case ISAL_NEED_DICT: return "needs a preset dictionary";
    default: return "inflate error";
  }
}

class IgzipInflater final : public GzipInflater {
 public:
  explicit IgzipInflater(const IgzipApi& api) : api_(api), state_(std::make_unique<inflate_state>()) {
    api_.init(state_.get());
    state_->crc_flag = ISAL_GZIP;  // the member's header parsed, its trailer (CRC-32, length) checked
  }
  const char* name() const override { return "igzip"; }

  void set_input(const std::uint8_t* data, std::size_t size) override {
    state_->next_in = const_cast<std::uint8_t*>(data);  // read only
    state_->avail_in = static_cast<std::uint32_t>(size);
  }
  std::size_t input_left() const override { return state_->avail_in; }

  std::expected<Step, std::string> inflate(std::uint8_t* out, std::size_t capacity) override {
    state_->next_out = out;
    state_->avail_out = static_cast<std::uint32_t>(std::min(capacity, kMaxStep));
    const std::uint32_t before = state_->avail_out;
    const int rc = api_.inflate(state_.get());
    if (rc < 0 || rc == ISAL_NEED_DICT) return std::unexpected(std::string(igzip_error(rc)));
    return Step{before - state_->avail_out, state_->block_state == ISAL_BLOCK_FINISH};
  }

  void next_member() override {
    // The reset clears the input too: what is left of it is put back.
    std::uint8_t* const next_in = state_->next_in;
    const std::uint32_t avail_in = state_->avail_in;
    api_.reset(state_.get());
    state_->crc_flag = ISAL_GZIP;
    state_->next_in = next_in;
    state_->avail_in = avail_in;
  }

 private:
  const IgzipApi& api_;
  std::unique_ptr<inflate_state> state_;  // 80 KiB of tables and history
};

class ZlibInflater final : public GzipInflater {
 public:
  ZlibInflater() {
    // 15 + 16: the gzip wrapper only; members are restarted by next_member().
    ready_ = inflateInit2(&zs_, 15 + 16) == Z_OK;
  }
  ~ZlibInflater() override {
    if (ready_) inflateEnd(&zs_);
  }
  const char* name() const override { return "zlib"; }

  void set_input(const std::uint8_t* data, std::size_t size) override {
    zs_.next_in = const_cast<Bytef*>(data);  // read only
    zs_.avail_in = static_cast<uInt>(size);
  }
  std::size_t input_left() const override { return zs_.avail_in; }

  std::expected<Step, std::string> inflate(std::uint8_t* out, std::size_t capacity) override {
    if (!ready_) return std::unexpected(std::string("zlib could not be initialized"));
    zs_.next_out = out;
    zs_.avail_out = static_cast<uInt>(std::min(capacity, kMaxStep));
    const uInt before = zs_.avail_out;
    const int rc = ::inflate(&zs_, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {  // Z_BUF_ERROR: more input wanted
      return std::unexpected(std::string(zs_.msg != nullptr ? zs_.msg : "zlib error"));
    }
    return Step{before - zs_.avail_out, rc == Z_STREAM_END};
  }

  void next_member() override { ready_ = inflateReset(&zs_) == Z_OK; }

 private:
  z_stream zs_{};
  bool ready_ = false;
};

}  // namespace

std::unique_ptr<GzipInflater> GzipInflater::make(bool igzip) {
  if (igzip && igzip_allowed.load(std::memory_order_relaxed)) {
    if (const IgzipApi* api = igzip_api()) return std::make_unique<IgzipInflater>(*api);
  }
  return std::make_unique<ZlibInflater>();
}

bool GzipInflater::use_igzip(bool allowed) {
  igzip_allowed.store(allowed, std::memory_order_relaxed);
  return allowed && igzip_api() != nullptr;
}

}  // namespace gpuscope::trace

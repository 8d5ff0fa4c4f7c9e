#include "analysis/training_event.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace gpuscope::analysis {

namespace {

// pid_max's ceiling on Linux (2^22).
constexpr std::int64_t kMaxPid = 4'194'304;
// The most GPUs an index may name (NVML counts them in an unsigned; no node has more than this).
constexpr std::uint64_t kMaxGpuIndex = 1023;
constexpr std::size_t kMaxGpuIdBytes = 96;

EventRejection invalid_event(std::string message) { return {EventRejectReason::kInvalid, std::move(message)}; }

// A field's number as a whole number in [0, max]: JSON integers, and doubles without a fraction
// (some encoders write 3.0).
std::expected<std::uint64_t, EventRejection> whole_number(simdjson::ondemand::value value, std::string_view field,
                                                          std::uint64_t max) {
  std::uint64_t u = 0;
  if (value.get_uint64().get(u) == simdjson::SUCCESS) {
    if (u > max) return std::unexpected(invalid_event(fmt::format("{}: {} is above {}", field, u, max)));
    return u;
  }
  double d = 0;
  if (value.get_double().get(d) != simdjson::SUCCESS) {
    return std::unexpected(invalid_event(fmt::format("{}: not a number", field)));
  }
  if (!(d >= 0) || d != std::floor(d) || d > static_cast<double>(max)) {
    return std::unexpected(invalid_event(fmt::format("{}: {} is not a whole number from 0 to {}", field, d, max)));
  }
  return static_cast<std::uint64_t>(d);
}

std::expected<double, EventRejection> finite_number(simdjson::ondemand::value value, std::string_view field) {
  double d = 0;
  if (value.get_double().get(d) != simdjson::SUCCESS) {
    return std::unexpected(invalid_event(fmt::format("{}: not a number", field)));
  }
  if (!std::isfinite(d)) return std::unexpected(invalid_event(fmt::format("{}: not a finite number", field)));
  return d;
}

bool has_control_character(std::string_view s) {
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

bool is_scalar_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxScalarNameBytes) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::expected<void, EventRejection> read_scalars(simdjson::ondemand::value value, TrainingEvent& event) {
  simdjson::ondemand::object object;
  if (value.get_object().get(object) != simdjson::SUCCESS) {
    return std::unexpected(invalid_event("scalars: not an object of names and numbers"));
  }
  for (auto field : object) {
    std::string_view name;
    if (field.unescaped_key().get(name) != simdjson::SUCCESS) {
      return std::unexpected(invalid_event("scalars: a name is not a string"));
    }
    if (!is_scalar_name(name)) {
      return std::unexpected(invalid_event(
          fmt::format("scalars: {:?} is not a name of letters, digits and _ (64 at most, not starting with a digit)",
                      name.substr(0, kMaxScalarNameBytes + 1))));
    }
    if (event.scalars.size() == kMaxScalarsPerEvent) {
      return std::unexpected(invalid_event(fmt::format("scalars: more than {}", kMaxScalarsPerEvent)));
    }
    simdjson::ondemand::value v;
    if (field.value().get(v) != simdjson::SUCCESS) return std::unexpected(invalid_event("scalars: malformed"));
    auto number = finite_number(v, fmt::format("scalars.{}", name));
    if (!number) return std::unexpected(number.error());
    event.scalars.emplace_back(std::string(name), *number);
  }
  return {};
}

// Reads one field into `event`; unknown fields are skipped (a newer client, an older agent).
std::expected<void, EventRejection> read_field(std::string_view key, simdjson::ondemand::value value,
                                               TrainingEvent& event, std::optional<std::string_view>& kind,
                                               bool& has_step, bool& has_duration, bool& has_epoch) {
  if (value.is_null()) return {};  // null is absent
  auto take_whole = [&](std::uint64_t max) { return whole_number(value, key, max); };
  auto take_bytes = [&](std::optional<double>& into) -> std::expected<void, EventRejection> {
    auto d = finite_number(value, key);
    if (!d) return std::unexpected(d.error());
    if (*d < 0) return std::unexpected(invalid_event(fmt::format("{}: {} is negative", key, *d)));
    into = *d;
    return {};
  };
  if (key == "event") {
    std::string_view s;
    if (value.get_string().get(s) != simdjson::SUCCESS) return std::unexpected(invalid_event("event: not a string"));
    kind = s;
  } else if (key == "job") {
    std::string_view s;
    if (value.get_string().get(s) != simdjson::SUCCESS) return std::unexpected(invalid_event("job: not a string"));
    if (s.empty() || s.size() > kMaxJobNameBytes) {
      return std::unexpected(invalid_event(fmt::format("job: {} bytes long (1 to {})", s.size(), kMaxJobNameBytes)));
    }
    if (has_control_character(s)) return std::unexpected(invalid_event("job: holds a control character"));
    event.job.assign(s);
  } else if (key == "rank") {
    auto r = take_whole(kMaxRank);
    if (!r) return std::unexpected(r.error());
    event.rank = static_cast<unsigned>(*r);
  } else if (key == "world_size") {
    auto w = take_whole(kMaxRank + 1);
    if (!w) return std::unexpected(w.error());
    if (*w == 0) return std::unexpected(invalid_event("world_size: 0 (at least 1)"));
    event.world_size = static_cast<unsigned>(*w);
  } else if (key == "local_rank") {
    auto r = take_whole(kMaxRank);
    if (!r) return std::unexpected(r.error());
    event.local_rank = static_cast<unsigned>(*r);
  } else if (key == "pid") {
    auto p = take_whole(kMaxPid);
    if (!p) return std::unexpected(p.error());
    if (*p == 0) return std::unexpected(invalid_event("pid: 0 is no process"));
    event.pid = static_cast<int>(*p);
  } else if (key == "gpu") {
    std::string_view s;
    if (value.get_string().get(s) == simdjson::SUCCESS) {
      if (s.empty() || s.size() > kMaxGpuIdBytes || has_control_character(s)) {
        return std::unexpected(invalid_event("gpu: not a GPU index or UUID"));
      }
      event.gpu.emplace(s);
    } else {
      auto index = take_whole(kMaxGpuIndex);
      if (!index) return std::unexpected(invalid_event("gpu: not a GPU index (0 to 1023) or UUID"));
      event.gpu = std::to_string(*index);
    }
  } else if (key == "time") {
    auto t = finite_number(value, key);
    if (!t) return std::unexpected(t.error());
    if (*t <= 0) return std::unexpected(invalid_event(fmt::format("time: {} is not a Unix time in seconds", *t)));
    event.time_s = *t;
  } else if (key == "step") {
    auto s = take_whole(std::numeric_limits<std::int64_t>::max());
    if (!s) return std::unexpected(s.error());
    event.step = *s;
    has_step = true;
  } else if (key == "duration_s") {
    auto d = finite_number(value, key);
    if (!d) return std::unexpected(d.error());
    if (!(*d > 0) || *d > kMaxStepDurationSeconds) {
      return std::unexpected(invalid_event(fmt::format("duration_s: {} is not above 0 and at most {} s", *d,
                                                       kMaxStepDurationSeconds)));
    }
    event.duration_s = *d;
    has_duration = true;
  } else if (key == "loss") {
    auto l = finite_number(value, key);
    if (!l) return std::unexpected(l.error());
    event.loss = *l;
  } else if (key == "scalars") {
    return read_scalars(value, event);
  } else if (key == "epoch") {
    auto e = take_whole(std::numeric_limits<std::int64_t>::max());
    if (!e) return std::unexpected(e.error());
    event.epoch = *e;
    has_epoch = true;
  } else if (key == "allocated_bytes") {
    return take_bytes(event.allocated_bytes);
  } else if (key == "reserved_bytes") {
    return take_bytes(event.reserved_bytes);
  } else if (key == "peak_allocated_bytes") {
    return take_bytes(event.peak_allocated_bytes);
  }
  return {};
}

}  // namespace

std::string_view reject_reason_id(EventRejectReason reason) {
  switch (reason) {
    case EventRejectReason::kMalformed: return "malformed";
    case EventRejectReason::kTooLarge: return "too_large";
    case EventRejectReason::kInvalid: return "invalid";
    case EventRejectReason::kTooManyJobs: return "too_many_jobs";
    case EventRejectReason::kTooManyRanks: return "too_many_ranks";
    case EventRejectReason::kCount: break;
  }
  return "unknown";
}

std::expected<TrainingEvent, EventRejection> TrainingEventParser::parse(std::string_view line) {
  if (line.size() > kMaxEventBytes) {
    return std::unexpected(EventRejection{EventRejectReason::kTooLarge,
                                          fmt::format("{} bytes (at most {} an event)", line.size(), kMaxEventBytes)});
  }
  // A line is one object: what follows its closing brace would otherwise go unread.
  if (line.empty() || line.front() != '{' || line.back() != '}') {
    return std::unexpected(EventRejection{EventRejectReason::kMalformed, "not a JSON object on one line"});
  }
  buffer_.assign(line);
  buffer_.resize(line.size() + simdjson::SIMDJSON_PADDING);
  simdjson::ondemand::document doc;
  if (parser_.iterate(buffer_.data(), line.size(), buffer_.size()).get(doc) != simdjson::SUCCESS) {
    return std::unexpected(EventRejection{EventRejectReason::kMalformed, "not JSON"});
  }
  simdjson::ondemand::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return std::unexpected(EventRejection{EventRejectReason::kMalformed, "not a JSON object"});
  }
  TrainingEvent event;
  std::optional<std::string_view> kind;
  bool has_step = false, has_duration = false, has_epoch = false;
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      return std::unexpected(EventRejection{EventRejectReason::kMalformed, "not JSON"});
    }
    simdjson::ondemand::value value;
    if (field.value().get(value) != simdjson::SUCCESS) {
      return std::unexpected(EventRejection{EventRejectReason::kMalformed, "not JSON"});
    }
    // Keys and strings stay where simdjson unescaped them until the next document.
    auto read = read_field(key, value, event, kind, has_step, has_duration, has_epoch);
    if (!read) return std::unexpected(read.error());
  }
  // On Demand stops at the object's closing brace: text after it ("{...} {...}", "{...}}") is only seen
  // here, where the document must be at its end (simdjson 3.0's document has no at_end()).
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
    return std::unexpected(EventRejection{EventRejectReason::kMalformed, "not one JSON object: text follows it"});
  }
  if (!kind) return std::unexpected(invalid_event("event: missing (step, epoch_start or epoch_end)"));
  const std::string_view kind_text = *kind;
  if (kind_text == "step") {
    event.kind = TrainingEventKind::kStep;
  } else if (kind_text == "epoch_start") {
    event.kind = TrainingEventKind::kEpochStart;
  } else if (kind_text == "epoch_end") {
    event.kind = TrainingEventKind::kEpochEnd;
  } else {
    return std::unexpected(invalid_event(
        fmt::format("event: {:?} is not step, epoch_start or epoch_end", kind_text.substr(0, 32))));
  }
  if (event.job.empty()) return std::unexpected(invalid_event("job: missing"));
  if (event.kind == TrainingEventKind::kStep) {
    if (!has_step) return std::unexpected(invalid_event("step: missing from a step event"));
    if (!has_duration) return std::unexpected(invalid_event("duration_s: missing from a step event"));
  } else if (!has_epoch) {
    return std::unexpected(invalid_event("epoch: missing from an epoch event"));
  }
  return event;
}

}  // namespace gpuscope::analysis

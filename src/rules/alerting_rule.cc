#include "rules/alerting_rule.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

namespace gpuscope::rules {

const char* alert_state_name(AlertState state) {
  switch (state) {
    case AlertState::kInactive: return "inactive";
    case AlertState::kPending: return "pending";
    case AlertState::kFiring: return "firing";
  }
  return "inactive";
}

bool Alert::needs_sending(std::int64_t t_ms, std::int64_t resend_delay_ms) const {
  if (state == AlertState::kPending) return false;
  if (resolved_at_ms > last_sent_at_ms) return true;  // resolved since the last send
  return last_sent_at_ms + resend_delay_ms < t_ms;
}

std::expected<std::vector<promql::InstantSample>, std::string> query_vector(const EvaluationContext& ctx,
                                                                            const promql::Expr& expr,
                                                                            std::int64_t t_ms) {
  auto result = ctx.engine->evaluate(*ctx.data, expr, t_ms, t_ms, 0, true);
  if (!result) return std::unexpected(result.error().message);
  if (auto* vector = std::get_if<promql::Vector>(&result->value)) return std::move(*vector);
  if (auto* scalar = std::get_if<promql::Scalar>(&result->value)) {
    return std::vector<promql::InstantSample>{{store::Labels{}, t_ms, scalar->value}};
  }
  return std::unexpected("rule result is not a vector or scalar");
}

namespace {

constexpr std::string_view kAlertNameLabel = "alertname";
constexpr std::string_view kAlertStateLabel = "alertstate";

std::string expand(const TemplatedField& field, const TemplateData& data, const TemplateQuery& query) {
  if (!field.value) return field.text;
  auto text = field.value->expand(data, query);
  // Prometheus keeps going with the error in the text, so a broken annotation is visible, not lost.
  return text ? std::move(*text) : fmt::format("<error expanding template: {}>", text.error());
}

}  // namespace

std::expected<std::vector<RuleSample>, std::string> AlertingRule::evaluate(const EvaluationContext& ctx,
                                                                           std::int64_t t_ms, int limit) {
  auto result = query_vector(ctx, *definition_.expr, t_ms);
  if (!result) return std::unexpected(std::move(result.error()));

  const TemplateQuery template_query = [&](std::string_view expr) -> std::expected<std::vector<QuerySample>, std::string> {
    auto r = ctx.engine->instant(*ctx.data, expr, t_ms);
    if (!r) return std::unexpected(r.error().message);
    std::vector<QuerySample> out;
    if (auto* v = std::get_if<promql::Vector>(&r->value)) {
      for (auto& s : *v) out.push_back({std::move(s.labels), s.value});
    } else if (auto* s = std::get_if<promql::Scalar>(&r->value)) {
      out.push_back({store::Labels{}, s->value});
    } else {
      return std::unexpected("query result is not a vector or scalar");
    }
    return out;
  };

  std::unordered_map<store::Labels, Alert, store::LabelsHash> seen;
  seen.reserve(result->size());
  for (promql::InstantSample& sample : *result) {
    TemplateData data;
    data.labels = sample.labels;  // __name__ included, as Prometheus gives it to templates
    data.value = sample.value;
    data.external_labels = ctx.external_labels;
    data.external_url = ctx.external_url;

    store::Labels labels = sample.labels;
    labels.remove(store::kMetricNameLabel);
    for (const TemplatedField& l : definition_.labels) labels.set(l.name, expand(l, data, template_query));
    labels.set(kAlertNameLabel, definition_.name);
    std::vector<store::Label> annotations;
    for (const TemplatedField& a : definition_.annotations) annotations.push_back({a.name, expand(a, data, template_query)});

    Alert alert;
    alert.labels = labels;
    alert.annotations = store::Labels(std::move(annotations));
    alert.state = AlertState::kPending;
    alert.value = sample.value;
    alert.active_at_ms = t_ms;
    if (!seen.emplace(std::move(labels), std::move(alert)).second) {
      return std::unexpected("vector contains metrics with the same labelset after applying alert labels");
    }
  }

  for (auto& [labels, fresh] : seen) {
    auto it = active_.find(labels);
    if (it != active_.end() && it->second.state != AlertState::kInactive) {
      it->second.value = fresh.value;
      it->second.annotations = std::move(fresh.annotations);
      continue;
    }
    active_.insert_or_assign(labels, std::move(fresh));
  }

  std::vector<RuleSample> out;
  std::size_t pending_or_firing = 0;
  for (auto it = active_.begin(); it != active_.end();) {
    Alert& a = it->second;
    if (!seen.contains(it->first)) {
      bool keep_firing = false;
      if (a.state == AlertState::kFiring && definition_.keep_firing_for_ms > 0) {
        if (a.keep_firing_since_ms == 0) a.keep_firing_since_ms = t_ms;
        keep_firing = t_ms - a.keep_firing_since_ms < definition_.keep_firing_for_ms;
      }
      if (a.state == AlertState::kPending ||
          (a.resolved_at_ms != 0 && t_ms - a.resolved_at_ms > kResolvedRetentionMs)) {
        it = active_.erase(it);
        continue;
      }
      if (!keep_firing) {
        if (a.state != AlertState::kInactive) {
          a.state = AlertState::kInactive;
          a.resolved_at_ms = t_ms;
        }
        ++it;
        continue;
      }
    } else {
      a.keep_firing_since_ms = 0;
    }
    ++pending_or_firing;
    if (a.state == AlertState::kPending && t_ms - a.active_at_ms >= definition_.for_ms) {
      a.state = AlertState::kFiring;
      a.fired_at_ms = t_ms;
    }
    store::Labels series = a.labels;
    series.set(store::kMetricNameLabel, "ALERTS_FOR_STATE");
    // Whole seconds, as Prometheus writes it (float64(ActiveAt.Unix())).
    const auto active_at_s = static_cast<double>(a.active_at_ms >= 0 ? a.active_at_ms / 1000 : -((-a.active_at_ms + 999) / 1000));
    out.push_back({series, active_at_s});
    series.set(store::kMetricNameLabel, "ALERTS");
    series.set(kAlertStateLabel, alert_state_name(a.state));
    out.push_back({std::move(series), 1.0});
    ++it;
  }
  if (limit > 0 && pending_or_firing > static_cast<std::size_t>(limit)) {
    active_.clear();
    return std::unexpected(fmt::format("exceeded limit of {} with {} alerts", limit, pending_or_firing));
  }
  return out;
}

std::vector<Alert> AlertingRule::take_alerts_to_send(std::int64_t t_ms, std::int64_t resend_delay_ms,
                                                     std::int64_t interval_ms) {
  std::vector<Alert> out;
  for (auto& [labels, a] : active_) {
    if (!a.needs_sending(t_ms, resend_delay_ms)) continue;
    a.last_sent_at_ms = t_ms;
    a.valid_until_ms = t_ms + 4 * std::max(resend_delay_ms, interval_ms);
    out.push_back(a);
  }
  std::sort(out.begin(), out.end(), [](const Alert& a, const Alert& b) { return a.labels < b.labels; });
  return out;
}

std::vector<Alert> AlertingRule::alerts() const {
  std::vector<Alert> out;
  out.reserve(active_.size());
  for (const auto& [labels, a] : active_) out.push_back(a);
  std::sort(out.begin(), out.end(), [](const Alert& a, const Alert& b) { return a.labels < b.labels; });
  return out;
}

void AlertingRule::restore(std::vector<Alert> alerts) {
  for (Alert& a : alerts) {
    store::Labels key = a.labels;
    active_.insert_or_assign(std::move(key), std::move(a));
  }
}

}  // namespace gpuscope::rules

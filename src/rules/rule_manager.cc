#include "rules/rule_manager.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace gpuscope::rules {
namespace {

// What a rule is, as written: a reload keeps a rule's state only when all of it is unchanged.
std::string fingerprint(const RuleDefinition& r) {
  std::string out = fmt::format("{}\n{}\n{}\n{}\n{}\n", r.kind == RuleDefinition::Kind::kAlert ? "alert" : "record",
                                r.name, r.expr_text, r.for_ms, r.keep_firing_for_ms);
  for (const TemplatedField& l : r.labels) out += fmt::format("l {}={}\n", l.name, l.text);
  for (const TemplatedField& a : r.annotations) out += fmt::format("a {}={}\n", a.name, a.text);
  return out;
}

}  // namespace

std::expected<std::vector<RuleGroupDefinition>, std::vector<std::string>> load_rule_groups(
    const std::vector<std::string>& files) {
  std::vector<RuleGroupDefinition> groups;
  std::vector<std::string> errors;
  for (const std::string& f : files) {
    auto file = load_rule_file(f);
    if (!file) {
      errors.insert(errors.end(), file.error().begin(), file.error().end());
      continue;
    }
    for (RuleGroupDefinition& g : file->groups) groups.push_back(std::move(g));
  }
  if (!errors.empty()) return std::unexpected(std::move(errors));
  return groups;
}

RuleManager::RuleManager(std::vector<RuleGroupDefinition> groups, RuleManagerOptions options)
    : options_(std::move(options)), engine_(options_.engine) {
  replace(std::move(groups));
}

void RuleManager::replace(std::vector<RuleGroupDefinition> definitions) {
  std::vector<RuleGroup> fresh;
  fresh.reserve(definitions.size());
  for (RuleGroupDefinition& d : definitions) fresh.emplace_back(std::move(d), options_.default_interval_ms);
  std::lock_guard lock(mu_);
  std::map<std::pair<std::string, std::string>, std::size_t> old_index;
  for (std::size_t i = 0; i < groups_.size(); ++i) old_index[{groups_[i].file(), groups_[i].name()}] = i;
  std::vector<std::int64_t> due(fresh.size(), 0);
  for (std::size_t gi = 0; gi < fresh.size(); ++gi) {
    auto it = old_index.find({fresh[gi].file(), fresh[gi].name()});
    if (it == old_index.end()) continue;
    RuleGroup& old = groups_[it->second];
    if (old.interval_ms() == fresh[gi].interval_ms()) due[gi] = next_due_ms_[it->second];
    fresh[gi].counters() = old.counters();
    std::map<std::string, RuleGroup::Rule*> old_rules;
    for (RuleGroup::Rule& r : old.rules()) old_rules.emplace(fingerprint(r.definition()), &r);
    for (RuleGroup::Rule& r : fresh[gi].rules()) {
      auto found = old_rules.find(fingerprint(r.definition()));
      if (found == old_rules.end()) continue;
      RuleGroup::Rule& before = *found->second;
      r.status = before.status;
      r.previous_series = before.previous_series;
      if (auto* alerting = std::get_if<AlertingRule>(&r.rule)) {
        alerting->restore(std::get<AlertingRule>(before.rule).alerts());
      }
      old_rules.erase(found);  // two identical rules each keep their own state
    }
  }
  groups_ = std::move(fresh);
  next_due_ms_ = std::move(due);
}

std::int64_t RuleManager::evaluate_due(const store::Queryable& data, SampleAppender& out, std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  EvaluationContext ctx;
  ctx.engine = &engine_;
  ctx.data = &data;
  ctx.external_labels = options_.external_labels;
  ctx.external_url = options_.external_url;
  std::int64_t next = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 0; i < groups_.size(); ++i) {
    std::int64_t& due = next_due_ms_[i];
    const std::int64_t interval = groups_[i].interval_ms();
    if (due == 0) due = now_ms;
    if (due <= now_ms) {
      // Missed slots are skipped: evaluate once, at the latest slot that has passed.
      const std::int64_t missed = (now_ms - due) / interval;
      const std::int64_t slot = due + missed * interval;
      groups_[i].counters().iterations_missed += static_cast<std::uint64_t>(missed);
      groups_[i].evaluate(ctx, out, slot);
      due = slot + interval;
    }
    next = std::min(next, due);
  }
  return next;
}

void RuleManager::visit(const std::function<void(const std::vector<RuleGroup>&)>& reader) const {
  std::lock_guard lock(mu_);
  reader(groups_);
}

void RuleManager::update(const std::function<void(std::vector<RuleGroup>&)>& writer) {
  std::lock_guard lock(mu_);
  writer(groups_);
}

}  // namespace gpuscope::rules

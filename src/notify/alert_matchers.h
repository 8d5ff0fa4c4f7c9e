// Alertmanager's matcher strings (`severity="critical"`, `gpu=~"0|1"`, `team!=ml`) as route and action
// config write them, read into the store's LabelMatcher so regexes anchor and behave as in PromQL.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "store/label_matcher.h"
#include "store/labels.h"

namespace gpuscope::notify {

// `name op value`, op one of = != =~ !~, value quoted ("..." with \" \\ \n escapes) or bare (trimmed).
// Errors say what is wrong, without the file position (the caller adds it).
std::expected<store::LabelMatcher, std::string> parse_alert_matcher(std::string_view text);

// Whether every matcher accepts the labels (an absent label reads as "").
bool matches_all(const std::vector<store::LabelMatcher>& matchers, const store::Labels& labels);

// `{a="b",c=~"d"}`: Alertmanager's rendering of a matcher list, used in route keys.
std::string matchers_text(const std::vector<store::LabelMatcher>& matchers);

}  // namespace gpuscope::notify

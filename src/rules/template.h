// Rule templates: Prometheus's alert-template language (Go's text/template with Prometheus's function
// set) that expands rule annotations and labels such as "{{ $labels.gpu }} at {{ $value | humanize }}".
#pragma once

#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/labels.h"

namespace gpuscope::rules {

// What a rule template sees. Prometheus declares $labels, $value, $externalLabels and $externalURL from
// these before every rule template; the same fields are also reachable as .Labels, .Value, ...
struct TemplateData {
  store::Labels labels;           // $labels and .Labels
  double value = 0;               // $value and .Value
  store::Labels external_labels;  // $externalLabels and .ExternalLabels
  std::string external_url;       // $externalURL and .ExternalURL; also externalURL and pathPrefix
};

// One element of the instant vector that the template function `query` returns.
struct QuerySample {
  store::Labels labels;  // with __name__, as Prometheus's sample.Labels map
  double value = 0;
};

// Runs a PromQL instant query for the template function `query`. When unset, `query` fails at expansion
// time with a clear message, so a template that never reaches a query still expands.
using TemplateQuery = std::function<std::expected<std::vector<QuerySample>, std::string>(std::string_view expr)>;

namespace template_internal {
struct Tree;
}

// A parsed template. Parse once (at rule-file load); expand on every evaluation. Copies share the tree.
class Template {
 public:
  // Errors are one line, "line L:C: <what>" with Go's wording ("function \"foo\" not defined",
  // "unexpected EOF", "unclosed action", "undefined variable \"$x\"", ...). L counts from 1, C counts
  // bytes from 0 as Go's text/template does. The caller prefixes the rule and file.
  static std::expected<Template, std::string> parse(std::string_view name, std::string_view text);

  // Errors read like Prometheus's: "error executing template NAME: template: NAME:L:C: executing \"NAME\"
  // at <humanize \"one\">: error calling humanize: strconv.ParseFloat: parsing \"one\": invalid syntax".
  std::expected<std::string, std::string> expand(const TemplateData& data, const TemplateQuery& query = {}) const;

  const std::string& name() const;

 private:
  explicit Template(std::shared_ptr<const template_internal::Tree> tree) : tree_(std::move(tree)) {}
  std::shared_ptr<const template_internal::Tree> tree_;
};

}  // namespace gpuscope::rules

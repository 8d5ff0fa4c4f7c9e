#include "notify/notify_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "model/file_text.h"
#include "model/yaml_error_text.h"
#include "notify/alert_matchers.h"
#include "promql/parser.h"

namespace gpuscope::notify {
namespace {

namespace fs = std::filesystem;

std::string trim_space(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// scheme://host[...] with a scheme from `schemes` and a non-empty host. Kept deliberately simple:
// libcurl does the real parsing; this catches typos at load time rather than at the first alert.
bool is_url_with_scheme(std::string_view url, std::initializer_list<std::string_view> schemes) {
  for (std::string_view scheme : schemes) {
    const std::string prefix = fmt::format("{}://", scheme);
    if (url.size() > prefix.size() && url.substr(0, prefix.size()) == prefix) {
      const std::string_view rest = url.substr(prefix.size());
      const char first = rest.front();
      return first != '/' && first != ':' && first != '?' && first != '#' &&
             rest.find_first_of(" \t\r\n") == std::string_view::npos;
    }
  }
  return false;
}

class ConfigReader {
 public:
  ConfigReader(std::string_view path, const EnvironmentLookup& env) : path_(path), env_(env) {
    base_dir_ = fs::path(path_).parent_path();
  }

  std::vector<std::string> errors;

  void error_at(const YAML::Node& node, std::string_view message) {
    const YAML::Mark mark = node.Mark();
    if (mark.line >= 0) {
      errors.push_back(fmt::format("{}:{}: {}", path_, mark.line + 1, message));
    } else {
      errors.push_back(fmt::format("{}: {}", path_, message));
    }
  }

  NotifyConfig read(const YAML::Node& root) {
    NotifyConfig config;
    config.path = path_;
    if (!root || root.IsNull()) return config;
    if (!root.IsMap()) {
      error_at(root, "the notification config is a mapping (alertmanagers, route, receivers, actions)");
      return config;
    }
    known_keys(root, "the notification config", {"resend_delay", "alertmanagers", "route", "receivers", "actions"});
    if (root["resend_delay"]) {
      if (auto ms = duration(root["resend_delay"], "resend_delay", false)) config.resend_delay_ms = *ms;
    }
    for_each_item(root["alertmanagers"], "alertmanagers", [&](const YAML::Node& n, const std::string& what) {
      config.alertmanagers.push_back(read_alertmanager(n, what));
    });
    std::set<std::string> receiver_names;
    for_each_item(root["receivers"], "receivers", [&](const YAML::Node& n, const std::string& what) {
      Receiver r = read_receiver(n, what);
      if (!r.name.empty() && !receiver_names.insert(r.name).second) {
        error_at(n, fmt::format("{}: receiver \"{}\" is defined twice", what, r.name));
      }
      config.receivers.push_back(std::move(r));
    });
    if (const YAML::Node route = root["route"]; route && !route.IsNull()) {
      if (!route.IsMap()) {
        error_at(route, "route must be a mapping");
      } else {
        config.route = read_root_route(route, receiver_names);
      }
    } else if (!config.receivers.empty()) {
      error_at(root, "receivers are defined but there is no route to reach them");
    }
    if (const YAML::Node actions = root["actions"]; actions && !actions.IsNull()) {
      config.actions = read_actions(actions);
    }
    return config;
  }

 private:
  // --- scalars ----------------------------------------------------------------------------------

  bool known_keys(const YAML::Node& map, std::string_view where, std::initializer_list<std::string_view> known) {
    bool ok = true;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string allowed;
        for (std::string_view k : known) allowed += fmt::format("{}{}", allowed.empty() ? "" : ", ", k);
        error_at(it->first, fmt::format("unknown key \"{}\" in {} (known: {})", key, where, allowed));
        ok = false;
      }
    }
    return ok;
  }

  std::optional<std::string> scalar(const YAML::Node& node, std::string_view what) {
    if (!node.IsScalar()) {
      error_at(node, fmt::format("{} must be a string", what));
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::optional<std::string> non_empty(const YAML::Node& node, std::string_view what) {
    auto s = scalar(node, what);
    if (s && s->empty()) {
      error_at(node, fmt::format("{} must not be empty", what));
      return std::nullopt;
    }
    return s;
  }

  std::optional<std::int64_t> duration(const YAML::Node& node, std::string_view what, bool positive) {
    auto text = scalar(node, what);
    if (!text) return std::nullopt;
    auto ms = promql::parse_duration(*text);
    if (!ms) {
      error_at(node, fmt::format("{}: not a valid duration: \"{}\" (use e.g. 30s, 5m, 4h)", what, *text));
      return std::nullopt;
    }
    if (positive && *ms <= 0) {
      error_at(node, fmt::format("{} must be greater than zero", what));
      return std::nullopt;
    }
    return *ms;
  }

  std::optional<bool> boolean(const YAML::Node& node, std::string_view what) {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      error_at(node, fmt::format("{} must be true or false", what));
      return std::nullopt;
    }
    return value;
  }

  void set_duration(const YAML::Node& map, const char* key, const std::string& what, std::int64_t& out,
                    bool positive = true) {
    if (!map[key]) return;
    if (auto ms = duration(map[key], fmt::format("{}.{}", what, key), positive)) out = *ms;
  }

  void set_bool(const YAML::Node& map, const char* key, const std::string& what, bool& out) {
    if (!map[key]) return;
    if (auto b = boolean(map[key], fmt::format("{}.{}", what, key))) out = *b;
  }

  void set_string(const YAML::Node& map, const char* key, const std::string& what, std::string& out) {
    if (!map[key]) return;
    if (auto s = scalar(map[key], fmt::format("{}.{}", what, key))) out = *s;
  }

  template <typename F>
  void for_each_item(const YAML::Node& list, const std::string& what, F&& f) {
    if (!list || list.IsNull()) return;
    if (!list.IsSequence()) {
      error_at(list, fmt::format("{} must be a list", what));
      return;
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YAML::Node item = list[i];
      const std::string item_what = fmt::format("{}[{}]", what, i);
      if (!item.IsMap()) {
        error_at(item, fmt::format("{} must be a mapping", item_what));
        continue;
      }
      f(item, item_what);
    }
  }

  std::vector<std::string> string_list(const YAML::Node& node, const std::string& what) {
    std::vector<std::string> out;
    if (!node.IsSequence()) {
      error_at(node, fmt::format("{} must be a list of strings", what));
      return out;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (auto s = scalar(node[i], fmt::format("{}[{}]", what, i))) out.push_back(*s);
    }
    return out;
  }

  std::vector<store::LabelMatcher> matchers(const YAML::Node& node, const std::string& what) {
    std::vector<store::LabelMatcher> out;
    if (!node) return out;
    if (!node.IsSequence()) {
      error_at(node, fmt::format("{} must be a list of matchers like 'severity=\"critical\"'", what));
      return out;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
      auto text = scalar(node[i], fmt::format("{}[{}]", what, i));
      if (!text) continue;
      auto m = parse_alert_matcher(*text);
      if (!m) {
        error_at(node[i], fmt::format("{}[{}]: {}", what, i, m.error()));
        continue;
      }
      out.push_back(std::move(*m));
    }
    return out;
  }

  // --- secrets ----------------------------------------------------------------------------------

  // `${NAME}` is replaced by the environment variable NAME; an unset one is an error (a webhook posting
  // to ".../${SLACK_HOOK}" literally would fail at the first alert instead of at load).
  std::optional<std::string> expand_environment(const YAML::Node& node, const std::string& what, std::string text) {
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
      const std::size_t start = text.find("${", i);
      if (start == std::string::npos) {
        out.append(text, i);
        break;
      }
      out.append(text, i, start - i);
      const std::size_t end = text.find('}', start + 2);
      if (end == std::string::npos) {
        error_at(node, fmt::format("{}: unterminated ${{ in the value", what));
        return std::nullopt;
      }
      const std::string name = text.substr(start + 2, end - start - 2);
      const bool valid_name = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      }) && !std::isdigit(static_cast<unsigned char>(name[0]));
      if (!valid_name) {
        error_at(node, fmt::format("{}: \"${{{}}}\" is not an environment variable reference", what, name));
        return std::nullopt;
      }
      auto value = env_ ? env_(name) : std::nullopt;
      if (!value) {
        error_at(node, fmt::format("{}: environment variable {} is not set", what, name));
        return std::nullopt;
      }
      out += *value;
      i = end + 1;
    }
    return out;
  }

  // The secret in `key` or in the file `key`_file (exactly one of them). Errors name the field and the
  // file, never the value.
  std::optional<Secret> secret(const YAML::Node& map, const std::string& key, const std::string& what, bool required) {
    const std::string file_key = key + "_file";
    const YAML::Node inline_value = map[key];
    const YAML::Node file_value = map[file_key];
    if (inline_value && file_value) {
      error_at(map, fmt::format("{}: set either {} or {}, not both", what, key, file_key));
      return std::nullopt;
    }
    if (inline_value) {
      auto text = scalar(inline_value, fmt::format("{}.{}", what, key));
      if (!text) return std::nullopt;
      auto expanded = expand_environment(inline_value, fmt::format("{}.{}", what, key), *text);
      if (!expanded) return std::nullopt;
      if (expanded->empty()) {
        error_at(inline_value, fmt::format("{}.{} is empty", what, key));
        return std::nullopt;
      }
      return Secret(std::move(*expanded));
    }
    if (file_value) {
      auto file = non_empty(file_value, fmt::format("{}.{}", what, file_key));
      if (!file) return std::nullopt;
      fs::path p(*file);
      if (p.is_relative()) p = base_dir_ / p;
      auto text = model::read_file_text(p.string());
      if (!text) {
        error_at(file_value, fmt::format("{}.{}: cannot read {}: {}", what, file_key, p.string(), text.error()));
        return std::nullopt;
      }
      std::string value = trim_space(*text);
      if (value.empty()) {
        error_at(file_value, fmt::format("{}.{}: {} is empty", what, file_key, p.string()));
        return std::nullopt;
      }
      return Secret(std::move(value));
    }
    if (required) error_at(map, fmt::format("{}: {} or {} is required", what, key, file_key));
    return std::nullopt;
  }

  // A secret that is a URL: checked for its scheme without ever printing it.
  std::optional<Secret> secret_url(const YAML::Node& map, const std::string& key, const std::string& what) {
    auto s = secret(map, key, what, true);
    if (s && !is_url_with_scheme(s->reveal(), {"http", "https"})) {
      const YAML::Node at = map[key] ? map[key] : map[key + "_file"];
      error_at(at, fmt::format("{}.{}: not an http:// or https:// URL (value not shown: it is a secret)", what, key));
      return std::nullopt;
    }
    return s;
  }

  std::optional<std::string> plain_url(const YAML::Node& node, const std::string& what,
                                       std::initializer_list<std::string_view> schemes) {
    auto url = non_empty(node, what);
    if (!url) return std::nullopt;
    if (!is_url_with_scheme(*url, schemes)) {
      std::string names;
      for (std::string_view s : schemes) names += fmt::format("{}{}://", names.empty() ? "" : " or ", s);
      error_at(node, fmt::format("{}: \"{}\" is not a {} URL", what, *url, names));
      return std::nullopt;
    }
    return url;
  }

  // --- sections ---------------------------------------------------------------------------------

  AlertmanagerTarget read_alertmanager(const YAML::Node& n, const std::string& what) {
    AlertmanagerTarget target;
    known_keys(n, what, {"url", "timeout"});
    if (!n["url"]) {
      error_at(n, fmt::format("{}: url is required", what));
    } else if (auto url = plain_url(n["url"], what + ".url", {"http", "https"})) {
      target.url = *url;
    }
    set_duration(n, "timeout", what, target.timeout_ms);
    return target;
  }

  Receiver read_receiver(const YAML::Node& n, const std::string& what) {
    Receiver r;
    r.line = n.Mark().line + 1;
    known_keys(n, what, {"name", "webhook_configs", "slack_configs", "pagerduty_configs", "email_configs"});
    if (!n["name"]) {
      error_at(n, fmt::format("{}: name is required", what));
    } else if (auto name = non_empty(n["name"], what + ".name")) {
      r.name = *name;
    }
    const std::string where = r.name.empty() ? what : fmt::format("receiver \"{}\"", r.name);
    for_each_item(n["webhook_configs"], where + ".webhook_configs", [&](const YAML::Node& c, const std::string& w) {
      known_keys(c, w, {"url", "url_file", "send_resolved", "max_alerts", "timeout"});
      WebhookIntegration hook;
      if (auto url = secret_url(c, "url", w)) hook.url = std::move(*url);
      set_bool(c, "send_resolved", w, hook.send_resolved);
      if (c["max_alerts"]) {
        std::int64_t max = -1;
        if (!c["max_alerts"].IsScalar() || !YAML::convert<std::int64_t>::decode(c["max_alerts"], max) || max < 0) {
          error_at(c["max_alerts"], fmt::format("{}.max_alerts must be a whole number >= 0", w));
        } else {
          hook.max_alerts = static_cast<std::size_t>(max);
        }
      }
      set_duration(c, "timeout", w, hook.timeout_ms);
      r.webhooks.push_back(std::move(hook));
    });
    for_each_item(n["slack_configs"], where + ".slack_configs", [&](const YAML::Node& c, const std::string& w) {
      known_keys(c, w, {"api_url", "api_url_file", "channel", "username", "icon_emoji", "send_resolved", "timeout"});
      SlackIntegration slack;
      if (auto url = secret_url(c, "api_url", w)) slack.api_url = std::move(*url);
      set_string(c, "channel", w, slack.channel);
      set_string(c, "username", w, slack.username);
      set_string(c, "icon_emoji", w, slack.icon_emoji);
      set_bool(c, "send_resolved", w, slack.send_resolved);
      set_duration(c, "timeout", w, slack.timeout_ms);
      r.slacks.push_back(std::move(slack));
    });
    for_each_item(n["pagerduty_configs"], where + ".pagerduty_configs", [&](const YAML::Node& c, const std::string& w) {
      known_keys(c, w, {"routing_key", "routing_key_file", "url", "source", "severity", "client", "client_url",
                        "send_resolved", "timeout"});
      PagerDutyIntegration pd;
      if (auto key = secret(c, "routing_key", w, true)) pd.routing_key = std::move(*key);
      if (c["url"]) {
        if (auto url = plain_url(c["url"], w + ".url", {"http", "https"})) pd.url = *url;
      }
      set_string(c, "source", w, pd.source);
      if (c["severity"]) {
        if (auto sev = scalar(c["severity"], w + ".severity")) {
          if (*sev != "critical" && *sev != "error" && *sev != "warning" && *sev != "info") {
            error_at(c["severity"], fmt::format("{}.severity: \"{}\" is not one of critical, error, warning, info", w, *sev));
          } else {
            pd.severity = *sev;
          }
        }
      }
      set_string(c, "client", w, pd.client);
      set_string(c, "client_url", w, pd.client_url);
      set_bool(c, "send_resolved", w, pd.send_resolved);
      set_duration(c, "timeout", w, pd.timeout_ms);
      r.pagerduties.push_back(std::move(pd));
    });
    for_each_item(n["email_configs"], where + ".email_configs", [&](const YAML::Node& c, const std::string& w) {
      known_keys(c, w, {"to", "from", "smarthost", "hello", "auth_username", "auth_password", "auth_password_file",
                        "require_tls", "send_resolved", "timeout"});
      EmailIntegration email;
      if (!c["to"]) {
        error_at(c, fmt::format("{}: to is required", w));
      } else if (c["to"].IsSequence()) {
        email.to = string_list(c["to"], w + ".to");
      } else if (auto to = scalar(c["to"], w + ".to")) {
        std::stringstream ss(*to);
        for (std::string addr; std::getline(ss, addr, ',');) {
          addr = trim_space(addr);
          if (!addr.empty()) email.to.push_back(addr);
        }
      }
      for (const std::string& addr : email.to) {
        if (addr.find('@') == std::string::npos) error_at(c["to"], fmt::format("{}.to: \"{}\" is not an address", w, addr));
      }
      if (c["to"] && email.to.empty()) error_at(c["to"], fmt::format("{}.to names no address", w));
      if (!c["from"]) {
        error_at(c, fmt::format("{}: from is required", w));
      } else if (auto from = non_empty(c["from"], w + ".from")) {
        if (from->find('@') == std::string::npos) error_at(c["from"], fmt::format("{}.from: \"{}\" is not an address", w, *from));
        email.from = *from;
      }
      if (!c["smarthost"]) {
        error_at(c, fmt::format("{}: smarthost is required (smtp://host:port or smtps://host:port)", w));
      } else if (auto host = plain_url(c["smarthost"], w + ".smarthost", {"smtp", "smtps"})) {
        email.smarthost = *host;
      }
      set_string(c, "hello", w, email.hello);
      set_string(c, "auth_username", w, email.auth_username);
      if (auto password = secret(c, "auth_password", w, false)) email.auth_password = std::move(*password);
      if (!email.auth_password.empty() && email.auth_username.empty()) {
        error_at(c, fmt::format("{}: auth_password needs auth_username", w));
      }
      set_bool(c, "require_tls", w, email.require_tls);
      set_bool(c, "send_resolved", w, email.send_resolved);
      set_duration(c, "timeout", w, email.timeout_ms);
      r.emails.push_back(std::move(email));
    });
    return r;
  }

  Route read_root_route(const YAML::Node& n, const std::set<std::string>& receivers) {
    Route root;
    if (n["matchers"]) error_at(n["matchers"], "route: the root route must not have matchers");
    if (n["continue"]) error_at(n["continue"], "route: the root route must not have continue");
    read_route(n, "route", "", root, receivers);
    if (root.receiver.empty()) error_at(n, "route: the root route needs a receiver");
    return root;
  }

  // Reads `n` into `route`, which holds the parent's inherited values on entry.
  void read_route(const YAML::Node& n, const std::string& what, const std::string& parent_key, Route& route,
                  const std::set<std::string>& receivers) {
    route.line = n.Mark().line + 1;
    known_keys(n, what, {"receiver", "group_by", "group_wait", "group_interval", "repeat_interval", "matchers",
                         "continue", "routes"});
    if (n["receiver"]) {
      if (auto name = non_empty(n["receiver"], what + ".receiver")) {
        if (!receivers.contains(*name)) {
          error_at(n["receiver"], fmt::format("{}.receiver: receiver \"{}\" does not exist", what, *name));
        }
        route.receiver = *name;
      }
    }
    if (n["group_by"]) {
      route.group_by.clear();
      route.group_by_all = false;
      std::set<std::string> seen;
      for (const std::string& name : string_list(n["group_by"], what + ".group_by")) {
        if (name == "...") {
          route.group_by_all = true;
        } else if (!store::is_valid_label_name(name)) {
          error_at(n["group_by"], fmt::format("{}.group_by: \"{}\" is not a label name", what, name));
        } else if (!seen.insert(name).second) {
          error_at(n["group_by"], fmt::format("{}.group_by: \"{}\" is listed twice", what, name));
        } else {
          route.group_by.push_back(name);
        }
      }
      if (route.group_by_all && !route.group_by.empty()) {
        error_at(n["group_by"], fmt::format("{}.group_by: '...' groups by every label and must stand alone", what));
      }
    }
    set_duration(n, "group_wait", what, route.group_wait_ms, false);
    set_duration(n, "group_interval", what, route.group_interval_ms);
    set_duration(n, "repeat_interval", what, route.repeat_interval_ms);
    route.matchers = matchers(n["matchers"], what + ".matchers");
    route.key = (parent_key.empty() ? "" : parent_key + "/") + matchers_text(route.matchers);
    route.continue_matching = false;
    set_bool(n, "continue", what, route.continue_matching);
    route.routes.clear();
    if (const YAML::Node children = n["routes"]; children && !children.IsNull()) {
      if (!children.IsSequence()) {
        error_at(children, fmt::format("{}.routes must be a list", what));
        return;
      }
      for (std::size_t i = 0; i < children.size(); ++i) {
        const std::string child_what = fmt::format("{}.routes[{}]", what, i);
        if (!children[i].IsMap()) {
          error_at(children[i], fmt::format("{} must be a mapping", child_what));
          continue;
        }
        Route child = route;  // inherits receiver, group_by and timings
        read_route(children[i], child_what, route.key, child, receivers);
        route.routes.push_back(std::move(child));
      }
    }
  }

  ActionsConfig read_actions(const YAML::Node& n) {
    ActionsConfig actions;
    if (!n.IsMap()) {
      error_at(n, "actions must be a mapping (enabled, commands)");
      return actions;
    }
    known_keys(n, "actions", {"enabled", "commands"});
    set_bool(n, "enabled", "actions", actions.enabled);
    std::set<std::string> names;
    for_each_item(n["commands"], "actions.commands", [&](const YAML::Node& c, const std::string& w) {
      known_keys(c, w, {"name", "matchers", "command", "on", "cooldown", "timeout", "dry_run"});
      ActionDefinition action;
      action.line = c.Mark().line + 1;
      if (!c["name"]) {
        error_at(c, fmt::format("{}: name is required", w));
      } else if (auto name = non_empty(c["name"], w + ".name")) {
        action.name = *name;
        if (!names.insert(action.name).second) error_at(c["name"], fmt::format("{}: action \"{}\" is defined twice", w, action.name));
      }
      const std::string where = action.name.empty() ? w : fmt::format("action \"{}\"", action.name);
      action.matchers = matchers(c["matchers"], where + ".matchers");
      if (!c["command"]) {
        error_at(c, fmt::format("{}: command is required (a list: the program and its arguments)", where));
      } else if (!c["command"].IsSequence()) {
        error_at(c["command"], fmt::format("{}.command must be a list (argv; it is never run through a shell)", where));
      } else {
        action.command = string_list(c["command"], where + ".command");
        if (action.command.empty()) error_at(c["command"], fmt::format("{}.command must not be empty", where));
        if (!action.command.empty() && action.command[0].find("{{") != std::string::npos) {
          error_at(c["command"], fmt::format("{}.command: the program itself must not be a template", where));
        }
        for (std::size_t i = 0; i < action.command.size(); ++i) {
          const std::string& arg = action.command[i];
          if (arg.find("{{") == std::string::npos) {
            action.command_templates.push_back(nullptr);
            continue;
          }
          auto parsed = rules::Template::parse(fmt::format("{}.command[{}]", action.name, i), arg);
          if (!parsed) {
            error_at(c["command"][i], fmt::format("{}.command[{}]: {}", where, i, parsed.error()));
            action.command_templates.push_back(nullptr);
            continue;
          }
          action.command_templates.push_back(std::make_shared<const rules::Template>(std::move(*parsed)));
        }
      }
      if (c["on"]) {
        if (auto on = scalar(c["on"], where + ".on")) {
          if (*on == "firing") {
            action.on = ActionTrigger::kFiring;
          } else if (*on == "resolved") {
            action.on = ActionTrigger::kResolved;
          } else {
            error_at(c["on"], fmt::format("{}.on: \"{}\" is not firing or resolved", where, *on));
          }
        }
      }
      set_duration(c, "cooldown", where, action.cooldown_ms, false);
      set_duration(c, "timeout", where, action.timeout_ms);
      set_bool(c, "dry_run", where, action.dry_run);
      actions.commands.push_back(std::move(action));
    });
    return actions;
  }

  std::string path_;
  const EnvironmentLookup& env_;
  fs::path base_dir_;
};

}  // namespace

const Receiver* NotifyConfig::find_receiver(std::string_view name) const {
  for (const Receiver& r : receivers) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

EnvironmentLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::expected<NotifyConfig, std::vector<std::string>> parse_notify_config(std::string_view text, std::string_view path,
                                                                          const EnvironmentLookup& env) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    const std::string where = e.mark.line >= 0 ? fmt::format("{}:{}", path, e.mark.line + 1) : std::string(path);
    return std::unexpected(std::vector<std::string>{fmt::format("{}: yaml: {}", where, model::yaml_error_text(e))});
  }
  ConfigReader reader(path, env);
  NotifyConfig config;
  try {
    config = reader.read(root);
  } catch (const YAML::Exception& e) {
    // A shape yaml-cpp refuses (an alias or merge key where a scalar belongs): still one line.
    reader.errors.push_back(fmt::format("{}:{}: yaml: {}", path, e.mark.line + 1, model::yaml_error_text(e)));
  }
  if (!reader.errors.empty()) return std::unexpected(std::move(reader.errors));
  return config;
}

std::expected<NotifyConfig, std::vector<std::string>> load_notify_config(const std::string& path,
                                                                         const EnvironmentLookup& env) {
  auto text = model::read_file_text(path);
  if (!text) return std::unexpected(std::vector<std::string>{fmt::format("{}: cannot read: {}", path, text.error())});
  return parse_notify_config(*text, path, env);
}

}  // namespace gpuscope::notify

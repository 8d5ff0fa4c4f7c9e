// A strict reader of the /metrics text for the exporter tests: it parses what ExpositionWriter wrote back
// into families and samples (unescaping help and label values) and rejects what either format forbids.
#pragma once

#include <cmath>
#include <cstdlib>
#include <expected>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::testing {

struct ParsedSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct ParsedFamily {
  std::string name;
  std::string type;
  std::string help;
  std::vector<ParsedSample> samples;
};

struct ParsedExposition {
  std::vector<ParsedFamily> families;

  const ParsedFamily* family(std::string_view name) const {
    for (const auto& f : families) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
  // Samples named `name` whose labels include every pair of `match`.
  std::vector<const ParsedSample*> samples(std::string_view name,
                                           const std::map<std::string, std::string>& match = {}) const {
    std::vector<const ParsedSample*> out;
    for (const auto& f : families) {
      for (const auto& s : f.samples) {
        if (s.name != name) continue;
        bool all = true;
        for (const auto& [k, v] : match) {
          auto it = s.labels.find(k);
          if (it == s.labels.end() || it->second != v) all = false;
        }
        if (all) out.push_back(&s);
      }
    }
    return out;
  }
  // The one sample named `name` with labels including `match`; nullopt when there is none or several.
  std::optional<double> value(std::string_view name, const std::map<std::string, std::string>& match = {}) const {
    auto s = samples(name, match);
    if (s.size() != 1) return std::nullopt;
    return s.front()->value;
  }
};

namespace detail {

inline bool is_name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

inline std::optional<double> parse_number(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (s.empty()) return std::nullopt;
  const std::string copy(s);
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  if (std::isnan(v) || std::isinf(v)) return std::nullopt;  // spelled "nan"/"inf": neither format allows it
  return v;
}

}  // namespace detail

// Parses `text` as the Prometheus text format (openmetrics false) or OpenMetrics 1.0 (true). Every family
// must have # HELP then # TYPE, once; samples must follow their family and be named after it (an
// OpenMetrics counter's samples add `_total`); OpenMetrics must end with "# EOF", text must not have it.
inline std::expected<ParsedExposition, std::string> parse_exposition(std::string_view text, bool openmetrics) {
  ParsedExposition out;
  std::set<std::string> seen;
  bool eof = false;
  int line_no = 0;
  if (!text.empty() && text.back() != '\n') return std::unexpected("the text does not end with a newline");
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = text.find('\n', pos);
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    auto fail = [&](std::string_view what) {
      return std::unexpected(std::to_string(line_no) + ": " + std::string(what) + ": '" + std::string(line) + "'");
    };
    if (eof) return fail("text after # EOF");
    if (line.empty()) return fail("empty line");
    if (line == "# EOF") {
      if (!openmetrics) return fail("# EOF in the text format");
      eof = true;
      continue;
    }
    if (line.starts_with("# HELP ")) {
      std::string_view rest = line.substr(7);
      const auto sp = rest.find(' ');
      if (sp == std::string_view::npos) return fail("HELP without text");
      const std::string name(rest.substr(0, sp));
      if (!seen.insert(name).second) return fail("family declared twice");
      std::string help;
      const std::string_view raw = rest.substr(sp + 1);
      for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '\\') {
          if (openmetrics && raw[i] == '"') return fail("unescaped quote in OpenMetrics help");
          help.push_back(raw[i]);
          continue;
        }
        if (++i == raw.size()) return fail("dangling backslash in help");
        if (raw[i] == '\\') {
          help.push_back('\\');
        } else if (raw[i] == 'n') {
          help.push_back('\n');
        } else if (raw[i] == '"' && openmetrics) {
          help.push_back('"');
        } else {
          return fail("bad escape in help");
        }
      }
      out.families.push_back({name, "", help, {}});
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      std::string_view rest = line.substr(7);
      const auto sp = rest.find(' ');
      if (sp == std::string_view::npos) return fail("TYPE without a type");
      if (out.families.empty() || out.families.back().name != rest.substr(0, sp) || !out.families.back().type.empty()) {
        return fail("TYPE does not follow its HELP");
      }
      const std::string type(rest.substr(sp + 1));
      const std::set<std::string> types = openmetrics ? std::set<std::string>{"counter", "gauge", "summary", "unknown"}
                                                      : std::set<std::string>{"counter", "gauge", "summary", "untyped"};
      if (!types.contains(type)) return fail("unexpected type");
      out.families.back().type = type;
      continue;
    }
    if (line.starts_with("#")) return fail("unexpected comment");

    // A sample: name{labels} value
    if (out.families.empty() || out.families.back().type.empty()) return fail("sample outside a family");
    auto& fam = out.families.back();
    ParsedSample s;
    std::size_t i = 0;
    while (i < line.size() && detail::is_name_char(line[i], i == 0)) ++i;
    s.name = std::string(line.substr(0, i));
    const std::string expected_name = openmetrics && fam.type == "counter" ? fam.name + "_total" : fam.name;
    // A summary's samples are its quantiles (the family's name), _sum and _count.
    const bool summary_part = fam.type == "summary" && (s.name == fam.name + "_sum" || s.name == fam.name + "_count");
    if (s.name != expected_name && !summary_part) return fail("sample name does not match its family " + fam.name);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        const std::size_t name_start = i;
        while (i < line.size() && detail::is_name_char(line[i], i == name_start)) ++i;
        const std::string label(line.substr(name_start, i - name_start));
        if (label.empty()) return fail("empty label name");
        if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return fail("label without =\"");
        i += 2;
        std::string value;
        while (true) {
          if (i >= line.size()) return fail("unterminated label value");
          const char c = line[i++];
          if (c == '"') break;
          if (c != '\\') {
            value.push_back(c);
            continue;
          }
          if (i >= line.size()) return fail("dangling backslash in a label value");
          const char e = line[i++];
          if (e == '\\') {
            value.push_back('\\');
          } else if (e == '"') {
            value.push_back('"');
          } else if (e == 'n') {
            value.push_back('\n');
          } else {
            return fail("bad escape in a label value");
          }
        }
        if (!s.labels.emplace(label, value).second) return fail("label repeated");
        if (i < line.size() && line[i] == ',') {
          ++i;
          continue;
        }
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        return fail("expected , or } after a label");
      }
    }
    if (i >= line.size() || line[i] != ' ') return fail("no space before the value");
    const auto v = detail::parse_number(line.substr(i + 1));
    if (!v) return fail("bad value");
    s.value = *v;
    fam.samples.push_back(std::move(s));
  }
  if (openmetrics && !eof) return std::unexpected("OpenMetrics text without # EOF");
  for (const auto& f : out.families) {
    if (f.type.empty()) return std::unexpected("family " + f.name + " has HELP but no TYPE");
  }
  return out;
}

}  // namespace gpuscope::testing

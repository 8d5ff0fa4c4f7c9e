#include "store/labels.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace gpuscope::store {

Labels::Labels(std::vector<Label> labels) {
  std::stable_sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.name < b.name; });
  for (auto& l : labels) {
    if (!items_.empty() && items_.back().name == l.name) {
      items_.back().value = std::move(l.value);
    } else {
      items_.push_back(std::move(l));
    }
  }
  std::erase_if(items_, [](const Label& l) { return l.value.empty(); });
}

std::string_view Labels::get(std::string_view name) const {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const Label& l, std::string_view n) { return l.name < n; });
  return it != items_.end() && it->name == name ? std::string_view(it->value) : std::string_view();
}

bool Labels::has(std::string_view name) const { return !get(name).empty(); }

void Labels::set(std::string_view name, std::string_view value) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const Label& l, std::string_view n) { return l.name < n; });
  if (it != items_.end() && it->name == name) {
    if (value.empty()) {
      items_.erase(it);
    } else {
      it->value = std::string(value);
    }
  } else if (!value.empty()) {
    items_.insert(it, Label{std::string(name), std::string(value)});
  }
}

void Labels::remove(std::string_view name) { set(name, ""); }

Labels Labels::keep_only(const std::vector<std::string>& names) const {
  Labels out;
  for (const auto& l : items_) {
    if (std::find(names.begin(), names.end(), l.name) != names.end()) out.items_.push_back(l);
  }
  return out;
}

Labels Labels::without(const std::vector<std::string>& names) const {
  Labels out;
  for (const auto& l : items_) {
    if (std::find(names.begin(), names.end(), l.name) == names.end()) out.items_.push_back(l);
  }
  return out;
}

std::size_t Labels::hash() const {
  std::size_t h = 0xcbf29ce484222325ULL;
  const std::hash<std::string_view> hs;
  for (const auto& l : items_) {
    h = (h ^ hs(l.name)) * 0x100000001b3ULL;
    h = (h ^ hs(l.value)) * 0x100000001b3ULL;
  }
  return h;
}

namespace {
void append_escaped(std::string& out, std::string_view v) {
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}
}  // namespace

bool is_valid_label_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size();) {
    const auto c = static_cast<unsigned char>(name[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > name.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(name[i + k]) & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

std::string Labels::to_string() const {
  std::string out(metric_name());
  out += '{';
  bool first = true;
  for (const auto& l : items_) {
    if (l.name == kMetricNameLabel) continue;
    if (!first) out += ", ";
    first = false;
    out += l.name;
    out += "=\"";
    append_escaped(out, l.value);
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace gpuscope::store

#include "notify/route_selection.h"

#include "notify/alert_matchers.h"

namespace gpuscope::notify {

std::vector<const Route*> select_routes(const Route& root, const store::Labels& labels) {
  if (!matches_all(root.matchers, labels)) return {};
  std::vector<const Route*> all;
  for (const Route& child : root.routes) {
    std::vector<const Route*> matched = select_routes(child, labels);
    const bool child_matched = !matched.empty();
    all.insert(all.end(), matched.begin(), matched.end());
    if (child_matched && !child.continue_matching) break;
  }
  if (all.empty()) all.push_back(&root);
  return all;
}

}  // namespace gpuscope::notify

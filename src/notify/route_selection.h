// Route selection: which routes of the tree an alert's labels reach, with Alertmanager's rules (depth
// first; the first matching child wins unless it says `continue`; a node no child takes is the match).
#pragma once

#include <vector>

#include "notify/notify_config.h"
#include "store/labels.h"

namespace gpuscope::notify {

// The matching routes in tree order; empty only when the root's own matchers reject the labels.
std::vector<const Route*> select_routes(const Route& root, const store::Labels& labels);

}  // namespace gpuscope::notify

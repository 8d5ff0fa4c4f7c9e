// The order in which nvidia-smi 580 lists its --query-gpu names (--help-query-gpu), each under the spelling it
// lists first: so that gpuscope's --help-query-gpu reads in the same order.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace gpuscope::exporter {

// The 188 names nvidia-smi 580 accepts for --query-gpu, in its order.
std::span<const std::string_view> smi_query_gpu_order();

// Where `name` stands in that order; nullopt for a name nvidia-smi does not list first (an alias, or
// gpuscope's own).
std::optional<std::size_t> smi_query_gpu_rank(std::string_view name);

}  // namespace gpuscope::exporter

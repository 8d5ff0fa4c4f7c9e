// Reads a scenario file (YAML, schema in scenarios/README.md) into a Scenario, or says in one line
// which file, which line and what is wrong. Also holds the built-in default scenario.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "sim/scenario.h"

namespace gpuscope::sim {

// The error is "<source>:<line>: <what is wrong>", ready to print after a program-name prefix.
std::expected<Scenario, std::string> parse_scenario(std::string_view yaml, std::string_view source);
std::expected<Scenario, std::string> load_scenario_file(const std::string& path);

// Used when GPUSCOPE_SIM_SCENARIO is unset: an 8x H100 node in a training job.
std::string_view builtin_scenario_yaml();
inline constexpr std::string_view kBuiltinScenarioSource = "<built-in scenario>";

}  // namespace gpuscope::sim

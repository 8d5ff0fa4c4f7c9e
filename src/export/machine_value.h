// How machine-readable output (JSON) names and writes a number: the unit goes into the key, the value
// stays a bare number, so consumers never parse "45 C" and a key never changes meaning between lines.
//
// The key rule: key = <name> + "_" + unit_suffix(<catalog unit>), or just <name> when the unit is
// dimensionless (count, bool, gen, lanes, pstate, bitmask, xid). <name> is the nvidia-smi query name for
// `query` ("temperature.gpu" + "C" -> "temperature.gpu_celsius", "memory.used" + "MiB" ->
// "memory.used_mib", "power.draw" + "W" -> "power.draw_watts", "pcie.link.gen.current" + "gen" ->
// "pcie.link.gen.current") and the column name for `dmon` ("pwr" + "W" -> "pwr_watts").
// Suffixes: MHz mhz, C celsius, W watts, % percent, MiB mib, KiB kib, mJ mj, ns ns, KB/s kb_per_second,
// MB/s mb_per_second, B/s bytes_per_second, ratio ratio, bytes bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpuscope::exporter {

// The suffix for a catalog unit: "" for a dimensionless one, nullopt for a unit this table lacks (a test
// walks the whole catalog, so a new unit cannot ship unnamed).
std::optional<std::string_view> unit_suffix(std::string_view unit);

// The JSON key for `name` measured in `unit`; an unknown unit is spelled out in lower case.
std::string json_key(std::string_view name, std::string_view unit);

// One JSON document as one line of text. Strings from outside (process names, hostnames) may hold
// invalid UTF-8; they are written with U+FFFD instead of making the whole line fail.
std::string json_line(const nlohmann::ordered_json& doc);

// A reading as a JSON number: an integer when the value is whole (45, not 45.0), else the value rounded
// to 6 decimals so float noise (250.12300000000002) does not reach the output. Null for NaN or infinity:
// callers leave such a field out.
nlohmann::ordered_json json_number(double value);

}  // namespace gpuscope::exporter

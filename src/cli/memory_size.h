// Memory sizes on the command line ("20GiB", "512MiB", "1.5GB"): a number and a unit, binary (KiB, MiB,
// GiB, TiB) or decimal (KB, MB, GB, TB), so "20G" never has to be guessed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpuscope::cli {

// Bytes; nullopt for a missing or unknown unit, a negative or non-numeric value, or more than 2^63 bytes.
// Units are matched without regard to case ("20gib").
std::optional<std::uint64_t> parse_memory_size(std::string_view text);

// "20 GiB", "512 MiB", "1.5 GiB" (binary units, at most one decimal): for messages.
std::string memory_size_text(std::uint64_t bytes);

}  // namespace gpuscope::cli

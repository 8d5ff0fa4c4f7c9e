// Appending a Recording to a store: idempotent (a sample already stored at its timestamp is counted,
// not appended again), so importing a file twice, or two overlapping exports, adds nothing twice.
#pragma once

#include <cstddef>
#include <expected>
#include <string>

#include "recording/recording.h"
#include "store/tsdb.h"

namespace gpuscope::recording {

struct ImportCounts {
  std::size_t series = 0;           // series in the recording with at least one sample
  std::size_t imported = 0;         // samples appended
  std::size_t already_present = 0;  // samples the store (or the file, twice) already had at that time
  // Samples older than the newest stored sample of their series but not stored: the store only
  // appends at the end of a series, so history before what a data dir holds cannot be inserted.
  std::size_t before_stored = 0;
};

// Appends every series' samples in time order; nothing is flushed (the caller flushes once).
std::expected<ImportCounts, std::string> import_recording(store::Tsdb& tsdb, Recording recording);

}  // namespace gpuscope::recording

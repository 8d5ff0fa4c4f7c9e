// The gpuscope_remote_write_* families: per receiver (label `url`, without credentials) what was sent,
// refused, is pending, and how far behind the receiver is.
#pragma once

#include <cstdint>
#include <span>

#include "export/exposition_writer.h"
#include "remote_write/remote_writer.h"

namespace gpuscope::remote_write {

void write_remote_write_metrics(exporter::ExpositionWriter& writer, std::span<const RemoteWriteStats> receivers,
                                std::int64_t now_ms);

}  // namespace gpuscope::remote_write

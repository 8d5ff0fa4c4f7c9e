#include "http/microhttpd_library.h"

#include "model/optional_library.h"

namespace gpuscope::http {
namespace {

std::expected<MicrohttpdApi, std::string> load() {
  auto library = model::OptionalLibrary::open({"libmicrohttpd.so.12"}, "libmicrohttpd");
  if (!library) return std::unexpected(library.error());
  MicrohttpdApi api{};
  library->bind("MHD_start_daemon", api.start_daemon);
  library->bind("MHD_stop_daemon", api.stop_daemon);
  library->bind("MHD_quiesce_daemon", api.quiesce_daemon);
  library->bind("MHD_get_daemon_info", api.get_daemon_info);
  library->bind("MHD_get_connection_info", api.get_connection_info);
  library->bind("MHD_lookup_connection_value", api.lookup_connection_value);
  library->bind("MHD_get_connection_values", api.get_connection_values);
  library->bind("MHD_create_response_from_buffer", api.create_response_from_buffer);
  library->bind("MHD_create_response_from_buffer_with_free_callback_cls",
                api.create_response_from_buffer_with_free_callback_cls);
  library->bind("MHD_add_response_header", api.add_response_header);
  library->bind("MHD_queue_response", api.queue_response);
  library->bind("MHD_destroy_response", api.destroy_response);
  return library->finish(api);
}

}  // namespace

std::expected<const MicrohttpdApi*, std::string> microhttpd_api() { return model::OptionalLibrary::once(&load); }

}  // namespace gpuscope::http

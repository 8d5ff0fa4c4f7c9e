// libmicrohttpd, opened with dlopen when the first server starts rather than linked: with GnuTLS and
// what that pulls in (p11-kit, nettle, gmp, libtasn1, ...) it costs every gpuscope process about
// 1.5 ms of start-up (tens of thousands of symbol relocations) and 3 MiB resident, and only
// `gpuscope serve` listens. Types and constants come from <microhttpd.h>.
#pragma once

#include <microhttpd.h>

#include <expected>
#include <string>

namespace gpuscope::http {

// The functions gpuscope calls, by their libmicrohttpd names less "MHD_", with the header's own types
// (decltype names no symbol, so nothing is linked). start_daemon and the info getters are variadic, as
// in libmicrohttpd: pass each option's values with exactly the types its manual gives.
struct MicrohttpdApi {
  decltype(&::MHD_start_daemon) start_daemon;
  decltype(&::MHD_stop_daemon) stop_daemon;
  decltype(&::MHD_quiesce_daemon) quiesce_daemon;
  decltype(&::MHD_get_daemon_info) get_daemon_info;
  decltype(&::MHD_get_connection_info) get_connection_info;
  decltype(&::MHD_lookup_connection_value) lookup_connection_value;
  decltype(&::MHD_get_connection_values) get_connection_values;
  decltype(&::MHD_create_response_from_buffer) create_response_from_buffer;
  decltype(&::MHD_create_response_from_buffer_with_free_callback_cls) create_response_from_buffer_with_free_callback_cls;
  decltype(&::MHD_add_response_header) add_response_header;
  decltype(&::MHD_queue_response) queue_response;
  decltype(&::MHD_destroy_response) destroy_response;
};

// libmicrohttpd loaded (once, thread-safely), or one line saying why it cannot be. Never unloaded.
std::expected<const MicrohttpdApi*, std::string> microhttpd_api();

}  // namespace gpuscope::http

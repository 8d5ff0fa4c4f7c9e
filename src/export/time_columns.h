// The Date and Time columns nvidia-smi dmon and pmon put first with `-o D`, `-o T` or `-o DT`, in local
// time (TZ), and how the GPU index column beside them is laid out in text and CSV output.
//
// Text layout, from a real nvidia-smi (dmon -o TD, a 5xx driver with 7-character columns):
//   #Date       Time        gpu     fb ...
//   #YYYYMMDD   HH:MM:SS    Idx     MB ...
//    20240104   13:54:35      0    239 ...
// Each of Date and Time takes 12 characters (the first one's '#' or ' ' included) and the index then
// takes 3 instead of the 5 of "# gpu"/"    0". A lone Date or Time column is laid out the same way;
// nvidia-smi's own output for those was not at hand, so that is an inference.
// CSV (dmon --format csv, ../shared/reference/real-h100/nvidia-smi/dmon_csv_dt.txt): "#Date, Time, gpu, ..."
// and rows " 20261125, 11:26:48, 0, ...".
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::exporter {

struct TimeColumns {
  bool date = false;  // D: YYYYMMDD
  bool time = false;  // T: HH:MM:SS
  bool any() const { return date || time; }
};

// The -o value: any of D and T (case as nvidia-smi takes them, upper), at least one. False otherwise.
bool parse_time_columns(std::string_view letters, TimeColumns& out);

// Text: the start of header line 1 ("# gpu" or "#Date       Time        gpu"), line 2 ("# Idx", ...).
std::string time_lead_names(TimeColumns columns);
std::string time_lead_units(TimeColumns columns);
// Text: the start of a row: "    0", or " 20240104   13:54:35      0" at time `t` (local time).
std::string time_lead_row(TimeColumns columns, std::chrono::system_clock::time_point t, unsigned gpu_index);
// The same with the index column's text given: a MIG instance's "0/1" (dmon's instance rows).
std::string time_lead_row(TimeColumns columns, std::chrono::system_clock::time_point t, std::string_view id);

// CSV: the cells before the value columns, for header line 1, line 2 and a row.
std::vector<std::string> time_cells_names(TimeColumns columns);
std::vector<std::string> time_cells_units(TimeColumns columns);
std::vector<std::string> time_cells_row(TimeColumns columns, std::chrono::system_clock::time_point t,
                                        unsigned gpu_index);
std::vector<std::string> time_cells_row(TimeColumns columns, std::chrono::system_clock::time_point t,
                                        std::string_view id);

// nvidia-smi's CSV lines: header lines start with '#', rows with a space, cells joined by ", ".
std::string csv_line(char lead, const std::vector<std::string>& cells);

}  // namespace gpuscope::exporter

// One line for a yaml-cpp exception, the same in every YAML file gpuscope reads (rule files and their
// tests, scenarios, the price catalog, notification configs). Header-only: see file_text.h.
#pragma once

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/exceptions.h>

#include <string>

namespace gpuscope::model {

// yaml-cpp's message, except for a document nested deeper than its parser allows: yaml-cpp 0.7 says
// "bad file" for that, which reads as a file that cannot be opened.
inline std::string yaml_error_text(const YAML::Exception& e) {
  if (dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr) {
    return "nested too deeply (more levels of lists and maps than the YAML parser allows)";
  }
  return e.msg;
}

}  // namespace gpuscope::model

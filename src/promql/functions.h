// The PromQL function table: each function's name, argument types and return type, as Prometheus
// declares them (promql/parser/functions.go). The parser type-checks calls against it; the
// evaluator looks implementations up by name.
#pragma once

#include <string_view>
#include <vector>

#include "promql/ast.h"

namespace gpuscope::promql {

struct Function {
  std::string_view name;
  std::vector<ValueType> arg_types;
  // -1: exactly arg_types.size() arguments; otherwise the last `variadic` arguments are optional
  // (Prometheus's Variadic: 1 means one optional trailing argument; -1 in Prometheus means any
  // number of trailing arguments of the last type, written here as kUnbounded).
  int variadic = 0;
  ValueType return_type = ValueType::kVector;
  bool experimental = false;  // parsed only when experimental functions are enabled
};
inline constexpr int kUnboundedVariadic = -1;

// nullptr when no such function.
const Function* find_function(std::string_view name);

}  // namespace gpuscope::promql

// PromQL's abstract syntax tree: what the parser builds and the evaluator walks. Node kinds and
// fields follow Prometheus's own AST (promql/parser/ast.go), so semantics map one to one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "store/label_matcher.h"

namespace gpuscope::promql {

enum class ValueType { kNone, kScalar, kVector, kMatrix, kString };
const char* value_type_name(ValueType t);  // "scalar", "instant vector", "range vector", "string"

// Byte offsets into the query text, [start, end).
struct PosRange {
  std::size_t start = 0;
  std::size_t end = 0;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// `@ <time>`, `@ start()` or `@ end()` on a selector or subquery.
struct AtModifier {
  enum class Kind { kNone, kTime, kStart, kEnd };
  Kind kind = Kind::kNone;
  std::int64_t t_ms = 0;  // for kTime
};

struct NumberLiteral {
  double value = 0;
};

struct StringLiteral {
  std::string value;
};

struct VectorSelector {
  std::string name;  // the metric name when written before the braces; also present as a matcher
  std::vector<store::LabelMatcher> matchers;  // includes __name__="name" when a name was written
  std::int64_t offset_ms = 0;                 // positive: back in time; negative offsets allowed
  AtModifier at;
};

struct MatrixSelector {
  ExprPtr vector_selector;  // always a VectorSelector (offset/@ live there)
  std::int64_t range_ms = 0;
  bool anchored = false;  // Prometheus 3 experimental `[5m] anchored` / `smoothed` modifiers
  bool smoothed = false;
};

struct SubqueryExpr {
  ExprPtr expr;
  std::int64_t range_ms = 0;
  std::int64_t step_ms = 0;  // 0: the engine's default evaluation interval
  std::int64_t offset_ms = 0;
  AtModifier at;
};

struct ParenExpr {
  ExprPtr expr;
};

enum class UnaryOp { kPlus, kMinus };
struct UnaryExpr {
  UnaryOp op = UnaryOp::kMinus;
  ExprPtr expr;
};

enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kMod, kPow, kAtan2,
  kEql, kNeq, kGtr, kLss, kGte, kLte,
  kAnd, kOr, kUnless,
};
const char* binary_op_text(BinaryOp op);  // "+", "==", "and", "atan2", ...
bool is_comparison(BinaryOp op);
bool is_set_operator(BinaryOp op);  // and, or, unless

enum class Cardinality { kOneToOne, kManyToOne, kOneToMany, kManyToMany };

// How the two sides of a vector/vector operation are matched: on(...) / ignoring(...) and
// group_left(...) / group_right(...). Absent (no modifier written) means ignoring() with one-to-one
// (many-to-many for set operators).
struct VectorMatching {
  Cardinality card = Cardinality::kOneToOne;
  std::vector<std::string> matching_labels;  // the on(...) or ignoring(...) list
  bool on = false;                           // true: on(...); false: ignoring(...)
  std::vector<std::string> include;          // group_left(...)/group_right(...) extra labels
};

struct BinaryExpr {
  BinaryOp op = BinaryOp::kAdd;
  ExprPtr lhs;
  ExprPtr rhs;
  bool return_bool = false;               // comparison with the `bool` modifier
  std::optional<VectorMatching> matching;  // set when both sides are vectors
};

enum class AggregateOp {
  kSum, kAvg, kMin, kMax, kCount, kStddev, kStdvar, kTopk, kBottomk, kQuantile, kCountValues, kGroup,
  kLimitk, kLimitRatio,
};
const char* aggregate_op_text(AggregateOp op);  // "sum", "count_values", ...

struct AggregateExpr {
  AggregateOp op = AggregateOp::kSum;
  ExprPtr expr;
  ExprPtr param;  // topk/bottomk/quantile/count_values/limitk/limit_ratio; null otherwise
  std::vector<std::string> grouping;
  bool without = false;
};

struct Function;  // functions.h: name, argument types, return type, variadic
struct Call {
  const Function* func = nullptr;
  std::vector<ExprPtr> args;
};

struct Expr {
  std::variant<NumberLiteral, StringLiteral, VectorSelector, MatrixSelector, SubqueryExpr, ParenExpr, UnaryExpr,
               BinaryExpr, AggregateExpr, Call>
      node;
  PosRange pos;

  ValueType type() const;
  template <class T>
  const T* as() const {
    return std::get_if<T>(&node);
  }
  template <class T>
  T* as() {
    return std::get_if<T>(&node);
  }
};

// Prometheus's canonical rendering of an expression (as `promtool` / the API print it).
std::string to_string(const Expr& e);

}  // namespace gpuscope::promql

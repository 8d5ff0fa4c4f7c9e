#include "promql/ast.h"

#include "promql/functions.h"

namespace gpuscope::promql {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kNone: return "none";
    case ValueType::kScalar: return "scalar";
    case ValueType::kVector: return "instant vector";
    case ValueType::kMatrix: return "range vector";
    case ValueType::kString: return "string";
  }
  return "none";
}

const char* binary_op_text(BinaryOp op) {
  static constexpr const char* kText[] = {"+",  "-",  "*", "/",  "%",  "^",   "atan2",  "==", "!=",
                                          ">",  "<",  ">=", "<=", "and", "or", "unless"};
  return kText[static_cast<int>(op)];
}

bool is_comparison(BinaryOp op) { return op >= BinaryOp::kEql && op <= BinaryOp::kLte; }
bool is_set_operator(BinaryOp op) { return op >= BinaryOp::kAnd; }

const char* aggregate_op_text(AggregateOp op) {
  static constexpr const char* kText[] = {"sum",      "avg",          "min",   "max",   "count",
                                          "stddev",   "stdvar",       "topk",  "bottomk", "quantile",
                                          "count_values", "group",    "limitk", "limit_ratio"};
  return kText[static_cast<int>(op)];
}

namespace {
struct TypeOf {
  ValueType operator()(const NumberLiteral&) const { return ValueType::kScalar; }
  ValueType operator()(const StringLiteral&) const { return ValueType::kString; }
  ValueType operator()(const VectorSelector&) const { return ValueType::kVector; }
  ValueType operator()(const MatrixSelector&) const { return ValueType::kMatrix; }
  ValueType operator()(const SubqueryExpr&) const { return ValueType::kMatrix; }
  ValueType operator()(const ParenExpr& p) const { return p.expr->type(); }
  ValueType operator()(const UnaryExpr& u) const { return u.expr->type(); }
  ValueType operator()(const BinaryExpr& b) const {
    return b.lhs->type() == ValueType::kScalar && b.rhs->type() == ValueType::kScalar ? ValueType::kScalar
                                                                                       : ValueType::kVector;
  }
  ValueType operator()(const AggregateExpr&) const { return ValueType::kVector; }
  ValueType operator()(const Call& c) const { return c.func != nullptr ? c.func->return_type : ValueType::kNone; }
};
}  // namespace

ValueType Expr::type() const { return std::visit(TypeOf{}, node); }

}  // namespace gpuscope::promql

// The values a rule template computes with, Go's fmt printing of them, and the template functions (Go's
// builtins and Prometheus's set). Internal to rules/template.cc; modelled on Go's reflect-based values.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "rules/template.h"
#include "store/labels.h"

namespace gpuscope::rules::template_internal {

// Go's untyped nil / invalid reflect.Value: what a missing key of a map[string]interface{} yields.
struct Nil {};
// html/template.HTML, the result of safeHtml: a string that is not assignable to string parameters.
struct Html {
  std::string text;
};
// map[string]string: $labels, .ExternalLabels, a sample's .Labels. Missing keys read as "" (Prometheus
// runs templates with missingkey=zero).
struct LabelMap {
  std::shared_ptr<const store::Labels> labels;
};
// Prometheus's *sample; a null pointer is Go's typed nil pointer.
struct Sample {
  store::Labels labels;
  double value = 0;
};
using SamplePtr = std::shared_ptr<const Sample>;
// Prometheus's queryResult ([]*sample). Shared, because Go's sortByLabel sorts the caller's slice in place.
using SampleList = std::vector<SamplePtr>;
using SampleListPtr = std::shared_ptr<SampleList>;
// The template's data (the struct Prometheus passes: Labels, ExternalLabels, ExternalURL, Value).
struct DataRef {
  const TemplateData* data = nullptr;
};
struct ArgMap;  // map[string]interface{}, the result of `args`
using ArgMapPtr = std::shared_ptr<const ArgMap>;

// Go's int is 64 bits wide; integer literals in templates are ints, float literals float64.
using Value = std::variant<Nil, bool, std::int64_t, double, std::string, Html, LabelMap, ArgMapPtr, SamplePtr,
                           SampleListPtr, DataRef>;

struct ArgMap {
  std::vector<std::pair<std::string, Value>> entries;  // sorted by key, as Go's fmt and range see a map
};

// Go's type name of a value, as %T and error messages print it ("float64", "map[string]string", ...).
std::string go_type_name(const Value& v);

// Go's truthiness (text/template's isTrue): false, 0, "", empty maps and lists, nil.
bool go_truth(const Value& v);

// What {{ value }} writes: fmt.Fprint of the value after text/template dereferences a pointer; a nil value
// prints "<no value>".
std::string go_template_print(const Value& v);

// fmt.Sprint, fmt.Sprintln and fmt.Sprintf over template values.
std::string go_sprint(std::span<const Value> args);
std::string go_sprintln(std::span<const Value> args);
std::string go_sprintf(std::string_view format, std::span<const Value> args);

// strconv.FormatFloat(v, verb, prec, 64) for verbs e, E, f, g, G (prec -1: shortest that round-trips).
std::string go_format_float(double v, char verb, int prec);
// strconv.Quote.
std::string go_quote(std::string_view s);
// strconv.Unquote of a Go "string" or `raw string` literal; the error is Go's "invalid syntax".
std::expected<std::string, std::string> go_unquote(std::string_view literal);
// A 'c' character literal as text/template reads one (strconv.UnquoteChar, then the closing quote).
std::expected<char32_t, std::string> go_unquote_char(std::string_view literal);
// strconv.ParseFloat(s, 64), with Go's error text ("strconv.ParseFloat: parsing \"x\": invalid syntax").
std::expected<double, std::string> go_parse_float(std::string_view s);
// strconv.ParseInt(s, 0, 64) and ParseUint(s, 0, 64): base prefixes and underscores as Go accepts them.
std::expected<std::int64_t, std::string> go_parse_int(std::string_view s);
std::expected<std::uint64_t, std::string> go_parse_uint(std::string_view s);

// utf8.DecodeRuneInString at s[i]: the rune (U+FFFD for an invalid byte) and its width in bytes.
std::pair<char32_t, int> go_decode_rune(std::string_view s, std::size_t i);
// fmt's %#U: "U+0041 'A'", the character shown only when printable.
std::string go_unicode(char32_t r);
// A character of a template identifier: '_', a letter or a digit.
bool go_is_alphanumeric(char32_t r);

// How a function parameter receives a value (Go's parameter types in the functions' signatures).
enum class Param {
  kAny,         // interface{} or reflect.Value: anything
  kString,      // string
  kSample,      // *sample
  kSampleList,  // queryResult
};
std::string_view param_type_name(Param p);

struct CallEnv {
  const TemplateData* data = nullptr;
  const TemplateQuery* query = nullptr;
};

// A function's implementation; an error becomes "error calling NAME: <error>".
using FunctionImpl = std::expected<Value, std::string> (*)(const CallEnv& env, std::vector<Value>& args);

// How the evaluator must call a function that is not a plain call.
enum class Special { kNone, kAnd, kOr, kCall };

struct Function {
  std::string_view name;
  std::vector<Param> params;  // with `variadic`, the last entry is the type of every trailing argument
  bool variadic = false;
  FunctionImpl impl = nullptr;
  Special special = Special::kNone;
};

// Go's builtins and Prometheus's template functions; nullptr for an unknown name.
const Function* find_function(std::string_view name);

}  // namespace gpuscope::rules::template_internal

#include "rules/template.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace gpuscope::rules {
namespace {

// Expected strings come from Prometheus's template/template_test.go, prometheus/common's
// helpers/templates tests, and Go's documented text/template and fmt behaviour.

TemplateData alert_data() {
  TemplateData d;
  d.labels = store::Labels{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", "0"}, {"instance", "node-1.example.com:9400"}};
  d.value = 87.5;
  d.external_labels = store::Labels{{"cluster", "lab"}};
  d.external_url = "http://testhost:9090/path/prefix";
  return d;
}

QuerySample sample(std::string name, std::string instance, double value) {
  return QuerySample{store::Labels{{"__name__", std::move(name)}, {"instance", std::move(instance)}}, value};
}

// A query callback that returns a fixed vector and remembers the expression it was asked for.
struct FakeQuery {
  std::vector<QuerySample> result;
  std::string* last_expr = nullptr;
  TemplateQuery fn() const {
    return [r = result, last = last_expr](std::string_view expr) -> std::expected<std::vector<QuerySample>, std::string> {
      if (last != nullptr) *last = std::string(expr);
      return r;
    };
  }
};

std::string expand(std::string_view text, const TemplateData& data = alert_data(), const TemplateQuery& query = {}) {
  auto t = Template::parse("test", text);
  if (!t) return "PARSE ERROR: " + t.error();
  auto r = t->expand(data, query);
  if (!r) return "EXEC ERROR: " + r.error();
  return *r;
}

std::string parse_error(std::string_view text) {
  auto t = Template::parse("test", text);
  return t ? "parsed" : t.error();
}

std::string exec_error(std::string_view text, const TemplateData& data = alert_data(), const TemplateQuery& query = {}) {
  auto t = Template::parse("test", text);
  if (!t) return "PARSE ERROR: " + t.error();
  auto r = t->expand(data, query);
  return r ? "expanded: " + *r : r.error();
}

TEST(Template, TextAndSimpleValues) {
  EXPECT_EQ(expand("plain text"), "plain text");
  EXPECT_EQ(expand("{{ 1 }}"), "1");
  EXPECT_EQ(expand("{{ \"<b>\" }}"), "<b>");  // text/template: no HTML escaping
  EXPECT_EQ(expand("{{ \"<b>\" | safeHtml }}"), "<b>");
  EXPECT_EQ(expand("{{ `raw\\n` }}"), "raw\\n");
  EXPECT_EQ(expand("{{ \"tab\\there\" }}"), "tab\there");
  EXPECT_EQ(expand("{{ 'a' }}"), "97");
  EXPECT_EQ(expand("{{ true }} {{ false }}"), "true false");
  EXPECT_EQ(expand("{{ 0x10 }} {{ 1_000 }} {{ -7 }}"), "16 1000 -7");
  EXPECT_EQ(expand("{{/* a comment */}}x{{- /* trimmed */ -}}  y"), "xy");
  EXPECT_EQ(expand("a  \n{{- 1 -}}\n  b"), "a1b");
  EXPECT_EQ(expand("{{ -1 }}"), "-1");  // "{{-" without a space is a number, not a trim marker
}

TEST(Template, FloatsPrintLikeGoPercentV) {
  EXPECT_EQ(expand("{{ 1.0 }} {{ 1.5 }} {{ 1e3 }} {{ 123456.0 }} {{ 1e6 }} {{ 1234567.0 }}"),
            "1 1.5 1000 123456 1e+06 1.234567e+06");
  EXPECT_EQ(expand("{{ 0.0001 }} {{ 0.00001 }} {{ 0.1 }}"), "0.0001 1e-05 0.1");
  TemplateData d = alert_data();
  d.value = 0.1 + 0.2;
  EXPECT_EQ(expand("{{ $value }}", d), "0.30000000000000004");
  d.value = std::numeric_limits<double>::infinity();
  EXPECT_EQ(expand("{{ $value }}", d), "+Inf");
  d.value = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(expand("{{ $value }}", d), "-Inf");
  d.value = std::nan("");
  EXPECT_EQ(expand("{{ $value }}", d), "NaN");
}

TEST(Template, PrometheusPreambleVariables) {
  EXPECT_EQ(expand("GPU {{ $labels.gpu }} on {{ $labels.instance }} is at {{ $value }}C"),
            "GPU 0 on node-1.example.com:9400 is at 87.5C");
  EXPECT_EQ(expand("{{ .Labels.gpu }}/{{ .Value }}/{{ .ExternalLabels.cluster }}/{{ .ExternalURL }}"),
            "0/87.5/lab/http://testhost:9090/path/prefix");
  EXPECT_EQ(expand("{{ $externalLabels.cluster }} {{ $externalURL }}"), "lab http://testhost:9090/path/prefix");
  // A missing label is the empty string (Prometheus runs templates with missingkey=zero).
  EXPECT_EQ(expand("[{{ $labels.nope }}][{{ .Labels.nope }}][{{ index $labels \"nope\" }}]"), "[][][]");
  EXPECT_EQ(expand("{{ $labels }}"),
            "map[__name__:DCGM_FI_DEV_GPU_TEMP gpu:0 instance:node-1.example.com:9400]");
  EXPECT_EQ(expand("{{ $.Labels.gpu }}"), "0");
  TemplateData html = alert_data();
  html.labels.set("job", "<b>&");
  EXPECT_EQ(expand("{{ $labels.job }}", html), "<b>&");
  EXPECT_EQ(exec_error("{{ .Foo }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <.Foo>: can't evaluate field Foo "
            "in type struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value "
            "interface {} }");
}

TEST(Template, Pipelines) {
  EXPECT_EQ(expand("{{ $value | humanize }}"), "87.5");
  EXPECT_EQ(expand("{{ humanize $value }}"), "87.5");
  EXPECT_EQ(expand("{{ printf \"%.1f\" $value }}"), "87.5");
  EXPECT_EQ(expand("{{ $value | printf \"%.0f%%\" }}"), "88%");
  EXPECT_EQ(expand("{{ printf \"%s-%s\" (toUpper \"a\") (\"b\" | toUpper) }}"), "A-B");
  EXPECT_EQ(expand("{{ 1234567.0 | humanize | toLower | printf \"[%s]\" }}"), "[1.235m]");
  EXPECT_EQ(expand("{{ (index $labels \"gpu\") }}"), "0");
  EXPECT_EQ(expand("{{ $x := 1 }}{{ $x = 2 }}{{ $x }}"), "2");
  EXPECT_EQ(expand("{{ $x := \"a\" }}{{ if true }}{{ $x = \"b\" }}{{ end }}{{ $x }}"), "b");
  EXPECT_EQ(expand("{{ $v := $value }}{{ $v = humanize 2048 }}{{ $v }}"), "2.048k");
}

TEST(Template, IfElseWithAndTruth) {
  const char* t = "{{ if gt $value 90.0 }}critical{{ else if gt $value 80.0 }}warning{{ else }}ok{{ end }}";
  EXPECT_EQ(expand(t), "warning");
  TemplateData d = alert_data();
  d.value = 95;
  EXPECT_EQ(expand(t, d), "critical");
  d.value = 10;
  EXPECT_EQ(expand(t, d), "ok");
  EXPECT_EQ(expand("{{ if 0 }}a{{ end }}{{ if \"\" }}b{{ end }}{{ if 0.0 }}c{{ end }}{{ if $labels.nope }}d{{ end }}"), "");
  EXPECT_EQ(expand("{{ if 1 }}a{{ end }}{{ if \"x\" }}b{{ end }}{{ if $labels }}c{{ end }}{{ if . }}d{{ end }}"), "abcd");
  EXPECT_EQ(expand("{{ with $labels.gpu }}gpu {{ . }}{{ else }}none{{ end }}"), "gpu 0");
  EXPECT_EQ(expand("{{ with $labels.nope }}x{{ else }}none{{ end }}"), "none");
  EXPECT_EQ(expand("{{ with $labels.nope }}x{{ else with $labels.gpu }}g{{ . }}{{ end }}"), "g0");
  // Variables declared in a control structure end with it.
  EXPECT_EQ(parse_error("{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}"), "line 1:38: undefined variable \"$y\"");
}

TEST(Template, Range) {
  EXPECT_EQ(expand("{{ range $k, $v := $labels }}{{ $k }}={{ $v }};{{ end }}"),
            "__name__=DCGM_FI_DEV_GPU_TEMP;gpu=0;instance=node-1.example.com:9400;");
  EXPECT_EQ(expand("{{ range $labels }}[{{ . }}]{{ end }}"), "[DCGM_FI_DEV_GPU_TEMP][0][node-1.example.com:9400]");
  EXPECT_EQ(expand("{{ range 3 }}{{ . }}{{ end }}"), "012");
  EXPECT_EQ(expand("{{ range $i := 5 }}{{ if eq $i 1 }}{{ continue }}{{ end }}{{ if eq $i 3 }}{{ break }}{{ end }}{{ $i }}{{ end }}"),
            "02");
  FakeQuery empty;
  EXPECT_EQ(expand("{{ range query \"up\" }}x{{ else }}no series{{ end }}", alert_data(), empty.fn()), "no series");
  EXPECT_EQ(parse_error("{{ break }}"), "line 1:9: {{break}} outside {{range}}");
  EXPECT_EQ(exec_error("{{ range 1.5 }}{{ end }}"),
            "error executing template test: template: test:1:9: executing \"test\" at <{{range 1.5}}{{end}}>: range "
            "can't iterate over 1.5");
}

TEST(Template, Comparisons) {
  EXPECT_EQ(expand("{{ eq 1 1 }} {{ eq 1 2 }} {{ eq \"a\" \"b\" \"c\" \"a\" }} {{ ne \"a\" \"b\" }}"), "true false true true");
  EXPECT_EQ(expand("{{ lt 1 2 }} {{ le 2 2 }} {{ gt 1.5 2.5 }} {{ ge \"b\" \"a\" }}"), "true true false true");
  EXPECT_EQ(expand("{{ eq $labels.gpu \"0\" }} {{ gt $value 80.0 }}"), "true true");
  // Go compares an int literal with a float64 only as an error: write 80.0, not 80.
  EXPECT_EQ(exec_error("{{ gt $value 80 }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <gt $value 80>: error calling "
            "gt: incompatible types for comparison: float64 and int");
  EXPECT_EQ(exec_error("{{ lt true false }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <lt true false>: error calling "
            "lt: invalid type for comparison");
  EXPECT_EQ(exec_error("{{ eq 1 }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <eq 1>: error calling eq: missing "
            "argument for comparison");
}

TEST(Template, BooleanBuiltins) {
  EXPECT_EQ(expand("{{ and 1 0 }} {{ and 1 2 }} {{ or 0 \"\" \"x\" }} {{ or 0 \"\" }} {{ not 0 }} {{ not \"a\" }}"),
            "0 2 x  true false");
  // and/or short-circuit: the failing humanize is never called.
  EXPECT_EQ(expand("{{ or true (humanize \"bad\") }} {{ and false (humanize \"bad\") }}"), "true false");
}

TEST(Template, LenIndexSlice) {
  EXPECT_EQ(expand("{{ len $labels }} {{ len \"abc\" }} {{ index $labels \"gpu\" }} {{ index \"abc\" 1 }}"), "3 3 0 98");
  EXPECT_EQ(expand("{{ slice \"abcdef\" 1 3 }} {{ slice \"abc\" 1 }}"), "bc bc");
  EXPECT_EQ(exec_error("{{ len 3 }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <len 3>: error calling len: len "
            "of type int");
  EXPECT_EQ(exec_error("{{ index \"abc\" 7 }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <index \"abc\" 7>: error calling "
            "index: index out of range: 7");
}

TEST(Template, PrintFamilyAndEscapers) {
  EXPECT_EQ(expand("{{ print 1 2 \"a\" \"b\" 3 }}"), "1 2ab3");
  EXPECT_EQ(expand("{{ println 1 \"a\" }}"), "1 a\n");
  EXPECT_EQ(expand("{{ html \"<a href='x'>&\\\"\" }}"), "&lt;a href=&#39;x&#39;&gt;&amp;&#34;");
  EXPECT_EQ(expand("{{ js \"a'b\\\"<>=&\" }}"), "a\\'b\\\"\\u003C\\u003E\\u003D\\u0026");
  EXPECT_EQ(expand("{{ urlquery \"a b&c/d\" }}"), "a+b%26c%2Fd");
  EXPECT_EQ(expand("{{ html 1 2 }}"), "1 2");
}

TEST(Template, Printf) {
  EXPECT_EQ(expand("{{ printf \"%d\" 3 }}|{{ printf \"%05d\" 42 }}|{{ printf \"%-4d|\" 7 }}|{{ printf \"%+d\" 5 }}"),
            "3|00042|7   ||+5");
  EXPECT_EQ(expand("{{ printf \"%x %X %o %b %c %q\" 255 255 8 5 65 65 }}"), "ff FF 10 101 A 'A'");
  EXPECT_EQ(expand("{{ printf \"%.2f|%8.3f|%-8.1f|%e|%E\" 3.14159 2.5 2.5 1234.5678 0.000123 }}"),
            "3.14|   2.500|2.5     |1.234568e+03|1.230000E-04");
  EXPECT_EQ(expand("{{ printf \"%g %.3g %g %v %G\" 1e21 1234.5678 0.00001 2.5 1e-7 }}"), "1e+21 1.23e+03 1e-05 2.5 1E-07");
  EXPECT_EQ(expand("{{ printf \"%s|%10s|%-6s|%.2s|%q|%x\" \"a\" \"right\" \"left\" \"trunc\" \"q\\\"t\" \"hi\" }}"),
            "a|     right|left  |tr|\"q\\\"t\"|6869");
  EXPECT_EQ(expand("{{ printf \"%v %v %t %T %T\" $labels.gpu true false 1.5 $labels }}"),
            "0 true false float64 map[string]string");
  EXPECT_EQ(expand("{{ printf \"%d%%\" 50 }}"), "50%");
  // Go's fmt reports mismatches inline instead of failing.
  EXPECT_EQ(expand("{{ printf \"%d\" 1.5 }}|{{ printf \"%s\" 3 }}|{{ printf \"%d\" }}|{{ printf \"%d\" 1 2 }}|{{ printf \"%!\" }}|{{ printf \"%\" }}"),
            "%!d(float64=1.5)|%!s(int=3)|%!d(MISSING)|1%!(EXTRA int=2)|%!!(MISSING)|%!(NOVERB)");
  EXPECT_EQ(expand("{{ printf \"%6.2f|%06.2f|%+.1e\" $value $value $value }}"), " 87.50|087.50|+8.8e+01");
  EXPECT_EQ(expand("{{ printf \"%f %v\" $value $labels }}"),
            "87.500000 map[__name__:DCGM_FI_DEV_GPU_TEMP gpu:0 instance:node-1.example.com:9400]");
  EXPECT_EQ(expand("{{ printf \"%[2]d %[1]d\" 1 2 }}"), "2 1");
  EXPECT_EQ(expand("{{ printf \"%.40f\" 0.1 }}"), "0.1000000000000000055511151231257827021182");
  EXPECT_EQ(expand("{{ printf \"%x|%.1x\" 1.0 1.5 }}"), "0x1p+00|0x1.8p+00");
}

TEST(Template, Humanize) {
  EXPECT_EQ(expand("{{ humanize 0.0 }}:{{ humanize 1.0 }}:{{ humanize 1234567.0 }}:{{ humanize .12 }}"), "0:1:1.235M:120m");
  EXPECT_EQ(expand("{{ humanize \"0.0\" }}:{{ humanize \"1.0\" }}:{{ humanize \"1234567.0\" }}:{{ humanize \".12\" }}"),
            "0:1:1.235M:120m");
  EXPECT_EQ(expand("{{ humanize 0 }}:{{ humanize -1 }}:{{ humanize 1234567 }}:{{ humanize 9223372036854775807 }}"),
            "0:-1:1.235M:9.223E");
  EXPECT_EQ(expand("{{ humanize 0.0012345 }} {{ humanize 1e-20 }} {{ humanize -2500.0 }}"), "1.234m 10z -2.5k");
  EXPECT_EQ(expand("{{ humanize \"+Inf\" }}:{{ humanize \"-Inf\" }}:{{ humanize \"NaN\" }}"), "+Inf:-Inf:NaN");
  EXPECT_EQ(exec_error("{{ humanize \"one\" }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <humanize \"one\">: error calling "
            "humanize: strconv.ParseFloat: parsing \"one\": invalid syntax");
  EXPECT_EQ(exec_error("{{ humanize true }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <humanize true>: error calling "
            "humanize: can't convert bool to float");
}

TEST(Template, Humanize1024) {
  EXPECT_EQ(expand("{{ humanize1024 0.0 }}:{{ humanize1024 1.0 }}:{{ humanize1024 1048576.0 }}:{{ humanize1024 .12 }}"),
            "0:1:1Mi:0.12");
  EXPECT_EQ(expand("{{ humanize1024 0 }}:{{ humanize1024 -1 }}:{{ humanize1024 1234567 }}:{{ humanize1024 9223372036854775807 }}"),
            "0:-1:1.177Mi:8Ei");
  EXPECT_EQ(expand("{{ humanize1024 \"1048576.0\" }} {{ humanize1024 \"NaN\" }}"), "1Mi NaN");
}

TEST(Template, HumanizeDuration) {
  EXPECT_EQ(expand("{{ humanizeDuration 0 }}:{{ humanizeDuration 1 }}:{{ humanizeDuration 60 }}:{{ humanizeDuration 3600 }}:"
                   "{{ humanizeDuration 86400 }}:{{ humanizeDuration 90000 }}:{{ humanizeDuration -183845 }}:"
                   "{{ humanizeDuration 899.99 }}"),
            "0s:1s:1m 0s:1h 0m 0s:1d 0h 0m 0s:1d 1h 0m 0s:-2d 3h 4m 5s:14m 59s");
  EXPECT_EQ(expand("{{ humanizeDuration .1 }}:{{ humanizeDuration .0001 }}:{{ humanizeDuration .12345 }}:"
                   "{{ humanizeDuration 60.1 }}:{{ humanizeDuration 60.5 }}:{{ humanizeDuration 1.2345 }}:"
                   "{{ humanizeDuration 12.345 }}"),
            "100ms:100us:123.5ms:1m 0s:1m 0s:1.234s:12.35s");
  EXPECT_EQ(expand("{{ humanizeDuration 3599.9 }}|{{ humanizeDuration 0.0012 }}|{{ humanizeDuration \"86400\" }}|"
                   "{{ humanizeDuration 1234567 }}"),
            "59m 59s|1.2ms|1d 0h 0m 0s|14d 6h 56m 7s");
  EXPECT_EQ(expand("{{ humanizeDuration \"+Inf\" }}:{{ humanizeDuration \"NaN\" }}"), "+Inf:NaN");
}

TEST(Template, HumanizePercentage) {
  EXPECT_EQ(expand("{{ -0.22222 | humanizePercentage }}:{{ 0.0 | humanizePercentage }}:{{ 0.1234567 | humanizePercentage }}:"
                   "{{ 1.23456 | humanizePercentage }}"),
            "-22.22%:0%:12.35%:123.5%");
  EXPECT_EQ(expand("{{ humanizePercentage 0.1234 }} {{ humanizePercentage 1234567 }} {{ humanizePercentage \"0.5\" }}"),
            "12.34% 1.235e+08% 50%");
  EXPECT_EQ(exec_error("{{ \"one\" | humanizePercentage }}"),
            "error executing template test: template: test:1:11: executing \"test\" at <humanizePercentage>: error "
            "calling humanizePercentage: strconv.ParseFloat: parsing \"one\": invalid syntax");
}

TEST(Template, HumanizeTimestamp) {
  EXPECT_EQ(expand("{{ humanizeTimestamp 0 }}|{{ humanizeTimestamp -1 }}|{{ humanizeTimestamp 1234567 }}|"
                   "{{ humanizeTimestamp 9223372036 }}"),
            "1970-01-01 00:00:00 +0000 UTC|1969-12-31 23:59:59 +0000 UTC|1970-01-15 06:56:07 +0000 UTC|"
            "2262-04-11 23:47:16 +0000 UTC");
  EXPECT_EQ(expand("{{ 1435065584.128 | humanizeTimestamp }}|{{ \"1435065584.128\" | humanizeTimestamp }}"),
            "2015-06-23 13:19:44.128 +0000 UTC|2015-06-23 13:19:44.128 +0000 UTC");
  EXPECT_EQ(expand("{{ humanizeTimestamp \"+Inf\" }}:{{ humanizeTimestamp \"NaN\" }}"), "+Inf:NaN");
  EXPECT_EQ(exec_error("{{ humanizeTimestamp -9223372036854775808 }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <humanizeTimestamp "
            "-9223372036854775808>: error calling humanizeTimestamp: -9.223372036854776e+18 cannot be represented as a "
            "nanoseconds timestamp since it overflows int64");
}

TEST(Template, StringFunctions) {
  EXPECT_EQ(expand("{{ \"aa bb CC\" | title }}|{{ \"aa bb CC\" | toUpper }}|{{ \"aA bB CC\" | toLower }}"),
            "Aa Bb CC|AA BB CC|aa bb cc");
  // Go's strings.ToUpper maps rune by rune (simple case mapping), so ß has no upper case of its own.
  EXPECT_EQ(expand("{{ title \"it's gpu-node_1 x.y\" }}|{{ toUpper \"grüße\" }}"), "It's Gpu-Node_1 X.y|GRÜßE");
  EXPECT_EQ(expand("{{ match \"a+\" \"aa\" }} {{ match \"a+\" \"b\" }} {{ match \"^gpu[0-9]$\" \"gpu7\" }}"),
            "true false true");
  EXPECT_EQ(expand("{{ reReplaceAll \"(a)b\" \"x$1\" \"ab\" }}|{{ reReplaceAll \":[0-9]+$\" \"\" $labels.instance }}|"
                   "{{ reReplaceAll \"(?P<host>[^.]+)\\\\..*\" \"${host}!\" \"n1.example.com\" }}|"
                   "{{ reReplaceAll \"a*\" \"-\" \"baaac\" }}"),
            "xa|node-1.example.com|n1!|-b-c-");
  EXPECT_EQ(exec_error("{{ match \"(\" \"x\" }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <match \"(\" \"x\">: error "
            "calling match: error parsing regexp: missing closing ): `(`");
  EXPECT_EQ(exec_error("{{ toUpper $value }}"),
            "error executing template test: template: test:1:11: executing \"test\" at <$value>: wrong type for "
            "value; expected string; got float64");
}

TEST(Template, HostAndLinkFunctions) {
  EXPECT_EQ(expand("{{ \"foo.example.com\" | stripPort }}|{{ \"foo.example.com:12345\" | stripPort }}|"
                   "{{ \"192.0.2.1:12345\" | stripPort }}|{{ \"2001:0DB8::1\" | stripPort }}|"
                   "{{ \"[2001:0DB8::1]:12345\" | stripPort }}|{{ \"[2001:0DB8::1]::12345\" | stripPort }}"),
            "foo.example.com|foo.example.com|192.0.2.1|2001:0DB8::1|2001:0DB8::1|[2001:0DB8::1]::12345");
  EXPECT_EQ(expand("{{ \"foo.example.com\" | stripDomain }}|{{ \"foo.example.com:12345\" | stripDomain }}|"
                   "{{ \"192.0.2.1\" | stripDomain }}|{{ \"192.0.2.1:12345\" | stripDomain }}|"
                   "{{ \"2001:0DB8::1\" | stripDomain }}|{{ \"[2001:0DB8::1]:12345\" | stripDomain }}|"
                   "{{ \"[2001:0DB8::1]::12345\" | stripDomain }}"),
            "foo|foo:12345|192.0.2.1|192.0.2.1:12345|2001:0DB8::1|[2001:0DB8::1]:12345|[2001:0DB8::1]::12345");
  EXPECT_EQ(expand("{{ graphLink \"up\" }}|{{ tableLink \"up\" }}|{{ graphLink \"rate(x[5m]) > 1\" }}"),
            "/graph?g0.expr=up&g0.tab=0|/graph?g0.expr=up&g0.tab=1|/graph?g0.expr=rate%28x%5B5m%5D%29+%3E+1&g0.tab=0");
  EXPECT_EQ(expand("{{ pathPrefix }}|{{ externalURL }}"), "/path/prefix|http://testhost:9090/path/prefix");
  EXPECT_EQ(expand("{{ printf \"%0.2f\" (parseDuration \"1h2m10ms\") }}|{{ parseDuration \"1w\" }}|{{ parseDuration \"0\" }}"),
            "3720.01|604800|0");
  EXPECT_EQ(exec_error("{{ parseDuration \"5x\" }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <parseDuration \"5x\">: error "
            "calling parseDuration: unknown unit \"x\" in duration \"5x\"");
}

TEST(Template, QueryFunctions) {
  std::string asked;
  FakeQuery q{{sample("metric", "b", 21), sample("metric", "a", 11)}, &asked};
  EXPECT_EQ(expand("{{ query \"metric{instance='a'}\" | first | value }}", alert_data(), q.fn()), "21");
  EXPECT_EQ(asked, "metric{instance='a'}");
  EXPECT_EQ(expand("{{ query \"metric\" | first | label \"instance\" }}", alert_data(), q.fn()), "b");
  EXPECT_EQ(expand("{{ query \"metric\" | first | label \"foo\" }}", alert_data(), q.fn()), "");
  EXPECT_EQ(expand("{{ $x := query \"metric\" | first }}{{ $x.Labels.foo }}{{ $x.Labels.instance }}", alert_data(), q.fn()), "b");
  EXPECT_EQ(expand("{{ range query \"metric\" | sortByLabel \"instance\" }}{{ .Labels.instance }}:{{ .Value }}: {{ end }}",
                   alert_data(), q.fn()),
            "a:11: b:21: ");
  EXPECT_EQ(expand("{{ range $i, $s := query \"metric\" }}{{ $i }}={{ $s.Value | humanize }} {{ end }}", alert_data(), q.fn()),
            "0=21 1=11 ");
  EXPECT_EQ(expand("{{ len (query \"metric\") }} {{ (index (query \"metric\") 1).Value }}", alert_data(), q.fn()), "2 11");
  // Printing a sample: the template dereferences the pointer, fmt's %v shows it as a pointer to a struct.
  EXPECT_EQ(expand("{{ query \"metric\" | first }}|{{ printf \"%v\" (query \"metric\" | first) }}", alert_data(), q.fn()),
            "{map[__name__:metric instance:b] 21}|&{map[__name__:metric instance:b] 21}");
  FakeQuery strq{{QuerySample{store::Labels{{"__name__", "metric"}, {"__value__", "a"}}, 11}}};
  EXPECT_EQ(expand("{{ query \"metric{__value__='a'}\" | first | strvalue }}", alert_data(), strq.fn()), "a");
  FakeQuery empty;
  EXPECT_EQ(exec_error("{{ query \"missing\" | first }}", alert_data(), empty.fn()),
            "error executing template test: template: test:1:21: executing \"test\" at <first>: error calling first: "
            "first() called on vector with no elements");
  EXPECT_EQ(exec_error("{{ (query \"missing\").banana }}", alert_data(), empty.fn()),
            "error executing template test: template: test:1:10: executing \"test\" at <\"missing\">: can't evaluate "
            "field banana in type template.queryResult");
  EXPECT_EQ(exec_error("{{ query \"up\" }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <query \"up\">: error calling "
            "query: no PromQL engine is available to this template");
  TemplateQuery failing = [](std::string_view) -> std::expected<std::vector<QuerySample>, std::string> {
    return std::unexpected(std::string("parse error: unexpected end of input"));
  };
  EXPECT_EQ(exec_error("{{ query \"up{\" }}", alert_data(), failing),
            "error executing template test: template: test:1:3: executing \"test\" at <query \"up{\">: error calling "
            "query: parse error: unexpected end of input");
}

TEST(Template, DefineTemplateAndArgs) {
  EXPECT_EQ(expand("{{define \"x\"}}{{.arg0}} {{.arg1}}{{end}}{{template \"x\" (args 1 \"2\")}}"), "1 2");
  EXPECT_EQ(expand("{{ (args 1 \"x\").arg1 }}"), "x");
  EXPECT_EQ(expand("{{ block \"b\" $labels.gpu }}[{{ . }}]{{ end }}"), "[0]");
  EXPECT_EQ(exec_error("{{ template \"nope\" }}"),
            "error executing template test: template: test:1:12: executing \"test\" at <{{template \"nope\"}}>: "
            "template \"nope\" not defined");
  EXPECT_EQ(exec_error("{{ define \"r\" }}{{ template \"r\" }}{{ end }}{{ template \"r\" }}"),
            "error executing template test: template: test:1:28: executing \"r\" at <{{template \"r\"}}>: exceeded "
            "maximum template depth (1000)");
}

TEST(Template, ParseErrors) {
  EXPECT_EQ(parse_error("{{ foo }}"), "line 1:3: function \"foo\" not defined");
  EXPECT_EQ(parse_error("ok\n  {{ $value | humanise }}"), "line 2:14: function \"humanise\" not defined");
  EXPECT_EQ(parse_error("{{ $x }}"), "line 1:3: undefined variable \"$x\"");
  EXPECT_EQ(parse_error("{{"), "line 1:2: unclosed action");
  EXPECT_EQ(parse_error("{{ $value "), "line 1:10: unclosed action");
  EXPECT_EQ(parse_error("{{ if true }}x"), "line 1:14: unexpected EOF");
  EXPECT_EQ(parse_error("{{ end }}"), "line 1:7: unexpected {{end}}");
  EXPECT_EQ(parse_error("{{ }}"), "line 1:3: missing value for command");
  EXPECT_EQ(parse_error("{{ $value | 3 }}"), "line 1:12: non executable command in pipeline stage 2");
  EXPECT_EQ(parse_error("{{ (1 }}"), "line 1:6: unclosed left paren");
  EXPECT_EQ(parse_error("{{ 1) }}"), "line 1:4: unexpected right paren");
  EXPECT_EQ(parse_error("{{ \"abc }}"), "line 1:3: unterminated quoted string");
  EXPECT_EQ(parse_error("{{/* x }}"), "line 1:2: unclosed comment");
  EXPECT_EQ(parse_error("{{ 3x }}"), "line 1:3: bad number syntax: \"3x\"");
  EXPECT_EQ(parse_error("{{ 1 . }}"), "parsed");  // `1 .` is a command with two operands: an error only when run
  EXPECT_EQ(parse_error("{{ \"a\".b }}"), "line 1:6: unexpected . after term \"\\\"a\\\"\"");
  EXPECT_EQ(parse_error("{{ else }}"), "line 1:8: unexpected {{else}}");
  EXPECT_EQ(parse_error("{{ if }}{{ end }}"), "line 1:6: missing value for if");
  EXPECT_EQ(parse_error("{{\u00a0}}"), "line 1:2: unrecognized character in action: U+00A0");
  EXPECT_EQ(parse_error("{{ $x, $y := 1 }}"), "line 1:5: too many declarations in command");
  EXPECT_EQ(parse_error("{{ " + std::string(2000, '(') + "1" + std::string(2000, ')') + " }}"),
            "line 1:1002: nesting depth exceeds 1000");
  std::string deep;
  for (int i = 0; i < 1200; ++i) deep += "{{ if 1 }}";
  EXPECT_EQ(parse_error(deep), "line 1:9993: nesting depth exceeds 1000");
}

TEST(Template, ArgumentErrors) {
  EXPECT_EQ(exec_error("{{ humanize 1 2 }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <humanize>: wrong number of "
            "args for humanize: want 1 got 2");
  EXPECT_EQ(exec_error("{{ 1 | humanize 2 }}"),
            "error executing template test: template: test:1:7: executing \"test\" at <humanize>: wrong number of "
            "args for humanize: want 1 got 2");
  EXPECT_EQ(exec_error("{{ printf }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <printf>: wrong number of args "
            "for printf: want at least 1 got 0");
  EXPECT_EQ(exec_error("{{ toUpper 3 }}"),
            "error executing template test: template: test:1:11: executing \"test\" at <3>: expected string; found 3");
  EXPECT_EQ(exec_error("{{ 1 2 }}"),
            "error executing template test: template: test:1:3: executing \"test\" at <1>: can't give argument to "
            "non-function 1");
  EXPECT_EQ(exec_error("{{ $labels.gpu.x }}"),
            "error executing template test: template: test:1:10: executing \"test\" at <$labels.gpu.x>: can't evaluate "
            "field x in type string");
}

TEST(Template, ParseOnceExpandMany) {
  auto t = Template::parse("__alert_GpuHot", "{{ $labels.gpu }}={{ $value | humanize }}");
  ASSERT_TRUE(t.has_value()) << t.error();
  EXPECT_EQ(t->name(), "__alert_GpuHot");
  TemplateData d = alert_data();
  for (double v : {1.0, 1500.0, 2e6}) {
    d.value = v;
    d.labels.set("gpu", std::to_string(static_cast<int>(v)));
  }
  EXPECT_EQ(t->expand(d).value_or("error"), "2000000=2M");
  const Template copy = *t;
  d.value = 0.5;
  EXPECT_EQ(copy.expand(d).value_or("error"), "2000000=500m");
}

}  // namespace
}  // namespace gpuscope::rules

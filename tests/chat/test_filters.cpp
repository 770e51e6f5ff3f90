// Filters and tests. Expected strings are Python Jinja2 3.1's output (transformers' tojson).
#include <gtest/gtest.h>

#include "render.h"

namespace minfer::chat::test {
namespace {

TEST(ChatFilters, Strings) {
  EXPECT_EQ(render(R"j({{ "  hi  " | trim }}|{{ "xxhixx" | trim('x') }}|{{ "hello world" | title }}|)j"
                   R"j({{ "hELLO" | capitalize }}|{{ "it's a-b (c)" | title }}|{{ 'a b' | replace(' ', '_') }})j"),
            "hi|hi|Hello World|Hello|It's A-B (C)|a_b");
  EXPECT_EQ(render(R"({{ "a\nb\n\nc" | indent(2) }}|{{ "a\nb" | indent(2, true) }}|{{ "a\n\nb" | indent(2, blank=true) }}|{{ "a\n" | indent }})"),
            "a\n  b\n\n  c|  a\n  b|a\n  \n  b|a\n");
  EXPECT_EQ(render(R"({{ '<a href="x">&' | escape }}|{{ 'x' | safe }}|{{ 'a b  c' | wordcount }}|{{ 'abc' | center(9) }}|{{ 'hello %s' | format('x') }})"),
            "&lt;a href=&#34;x&#34;&gt;&amp;|x|3|   abc   |hello x");
  EXPECT_EQ(render("{{ x | default('d') }}|{{ '' | default('d', true) }}|{{ none | default('d') }}|"
                   "{{ x | d('a') }}|{{ x | default }}|{{ 0 | d('z', boolean=true) }}"),
            "d|d|None|a||z");
}

TEST(ChatFilters, Sequences) {
  EXPECT_EQ(render("{{ [3,1,2] | sort }}|{{ ['b','A','a'] | sort }}|{{ [1,2,3] | reverse | list }}|"
                   "{{ [1,1,2] | unique | list }}|{{ ['A','a'] | unique | list }}"),
            "[1, 2, 3]|['A', 'a', 'b']|[3, 2, 1]|[1, 2]|['A']");
  EXPECT_EQ(render("{{ [1,2,3] | join(', ') }}|{{ [1,2,3] | first }}|{{ [1,2,3] | last }}|{{ [1,2,3] | length }}|"
                   "{{ 'abc' | count }}|{{ {'a':1} | length }}|{{ x | length }}"),
            "1, 2, 3|1|3|3|3|1|0");
  EXPECT_EQ(render("{{ [1,2,3,4,5] | batch(2) | list }}|{{ [1,5,3] | max }}|{{ [1,5,3] | min }}|{{ [1,2,3] | sum }}|"
                   "{{ {'b': 1, 'a': 2} | dictsort }}|{{ 'abc' | list }}"),
            "[[1, 2], [3, 4], [5]]|5|1|6|[('a', 2), ('b', 1)]|['a', 'b', 'c']");
  EXPECT_EQ(render("{{ [1, 2] | map('string') | join('+') }}|{{ ['3', '4'] | map('int') | sum }}|"
                   "{{ [{'n': 2}, {'n': 1}] | sort(attribute='n') | map(attribute='n') | list }}"),
            "1+2|7|[1, 2]");
}

TEST(ChatFilters, SelectAndMap) {
  const char* msgs = R"({"msgs": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                  {"role": "user", "content": "c"}]})";
  EXPECT_EQ(render("{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}|"
                   "{{ msgs | rejectattr('role', 'eq', 'user') | list | length }}|"
                   "{{ msgs | map(attribute='role') | unique | list }}|{{ msgs | map(attribute='x', default='-') | join }}",
                   msgs),
            "a,c|1|['user', 'assistant']|---");
  EXPECT_EQ(render("{{ [1,2,3,4] | select('odd') | list }}|{{ [1,2,3,4] | reject('even') | list }}|"
                   "{{ [0,1,''] | select | list }}|{{ ['a','b'] | map('upper') | list }}"),
            "[1, 3]|[1, 3]|[1]|['A', 'B']");
  // Attribute paths index lists with their digit parts; one past int64 is past the end.
  EXPECT_EQ(render("{{ [[7, 8]] | map(attribute='1') | join }}|"
                   "{{ [[7]] | map(attribute='99999999999999999999', default='d') | join }}"),
            "8|d");
}

TEST(ChatFilters, Numbers) {
  EXPECT_EQ(render("{{ -3 | abs }}|{{ 2.5 | round }}|{{ 3.14159 | round(2) }}|{{ 3.5 | round }}|{{ 7 | round }}|"
                   "{{ 2.675 | round(2) }}|{{ 1.5 | round(0, 'floor') }}|{{ 1.2 | round(method='ceil') }}"),
            "3|2.0|3.14|4.0|7|2.67|1.0|2.0");
  EXPECT_EQ(render("{{ '42' | int }}|{{ 'x' | int }}|{{ '4.5' | float }}|{{ 3 | float }}|{{ 4.7 | int }}|"
                   "{{ 12 | string }}|{{ [1] | string }}"),
            "42|0|4.5|3.0|4|12|[1]");
}

TEST(ChatFilters, ToJson) {
  const char* d = R"({"d": {"b": [1, 2, {"c": "x"}], "a": {}, "z": []}})";
  EXPECT_EQ(render("{{ d | tojson }}", d), R"({"b": [1, 2, {"c": "x"}], "a": {}, "z": []})");
  EXPECT_EQ(render("{{ d | tojson(indent=2) }}", d),
            "{\n  \"b\": [\n    1,\n    2,\n    {\n      \"c\": \"x\"\n    }\n  ],\n  \"a\": {},\n  \"z\": []\n}");
  // No HTML escaping, non-ASCII kept, control characters escaped; floats as Python prints them.
  EXPECT_EQ(render(R"({{ "\u00e9\"\n\t<>&'" | tojson }}|{{ [1.0, 1.5, 100.0, none, true] | tojson }}|{{ 1e100 | tojson }})"),
            "\"\xc3\xa9\\\"\\n\\t<>&'\"|[1.0, 1.5, 100.0, null, true]|1e+100");
  EXPECT_EQ(render("{{ '\x01' | tojson }}"), "\"\\u0001\"");
}

TEST(ChatTests, Types) {
  EXPECT_EQ(render("{{ 3 is odd }}|{{ 4 is even }}|{{ 9 is divisibleby 3 }}|{{ 9 is divisibleby(4) }}|"
                   "{{ 'a' is string }}|{{ 1 is number }}|{{ true is number }}|{{ true is integer }}|"
                   "{{ 1.5 is float }}|{{ true is boolean }}|{{ {} is mapping }}|{{ 'x' is iterable }}|"
                   "{{ x is iterable }}|{{ 1 is iterable }}"),
            "True|True|True|False|True|True|True|False|True|True|True|True|True|False");
  EXPECT_EQ(render("{{ 'abc' is lower }}|{{ 'ABC' is upper }}|{{ 1 is in [1,2] }}|{{ none is sameas none }}|"
                   "{{ false is sameas false }}|{{ 0 is sameas false }}|{{ true is true }}|{{ 1 is true }}|"
                   "{{ range is callable }}|{{ 1 is eq 1.0 }}|{{ 2 is gt 1 }}|{{ x is not none }}|{{ not x is defined }}"),
            "True|True|True|True|True|False|True|False|True|True|True|True|True");
  EXPECT_EQ(render("{{ x is defined }}|{{ x is undefined }}|{{ none is none }}|{{ none.x is defined }}|{{ 'abc'.nope is defined }}"),
            "False|True|True|False|False");
}

// Jinja2's int, float and round, which use Python's int(), float() and round().
TEST(ChatFilters, NumbersAsPython) {
  EXPECT_EQ(render("{{ 12345|round(-2) }} {{ 150|round(-2) }} {{ 250|round(-2) }} {{ -150|round(-2) }} {{ -151|round(-2) }} "
                   "{{ 7|round(-1) }} {{ 5|round(-1) }} {{ 15|round(-1) }} {{ 12345|round(2) }} {{ 2.5|round }} "
                   "{{ 1.2345|round(2) }} {{ 1234.5|round(-2) }} {{ 12|round(-1, 'ceil') }} {{ true|round(-1) }}"),
            "12300 200 200 -200 -200 10 0 20 12345 2.0 1.23 1200.0 20.0 0");
  EXPECT_EQ(render("{{ '0x1A'|int }} {{ '4_2'|int }} {{ ' 42 '|int }} {{ '4__2'|int }} {{ '_42'|int }} {{ '42_'|int }} "
                   "{{ '1e3'|int }} {{ '1.9'|int }} {{ '-1.9'|int }} {{ 'ff'|int(base=16) }} {{ '0xff'|int(base=16) }} "
                   "{{ '0x1f'|int(0, 0) }} {{ '010'|int(0, 0) }} {{ '010'|int }} {{ 'abc'|int(-1) }} {{ '1_0.5'|int }} "
                   "{{ 'nan'|int }} {{ '+7'|int }} {{ '0b101'|int(0, 2) }} {{ '1.'|int }} {{ '.5'|int }} {{ '.'|int }} {{ '1e'|int }}"),
            "0 42 42 0 0 0 1000 1 -1 255 255 31 10 10 -1 10 0 7 5 1 0 0 0");
  EXPECT_EQ(render("{{ '1_0.5'|float }} {{ '0x10'|float }} {{ 'inf'|float }} {{ '-Infinity'|float }} {{ '1e5'|float }} "
                   "{{ ' 2.5 '|float }} {{ 'abc'|float }} {{ '1__0'|float }}"),
            "10.5 0.0 inf -inf 100000.0 2.5 0.0 0.0");
}

// Keys other than strings (`{0: 'a'}`, as ByteDance's Seed-OSS template writes): Python's equal
// numbers are one key, and the first key written is the one kept.
TEST(ChatFilters, NonStringDictKeys) {
  EXPECT_EQ(render("{%- set m = {0: 0, 512: 128} -%}{% for k, v in m|dictsort %}{{ k }}:{{ v }};{% endfor %}{{ m[512] }}"),
            "0:0;512:128;128");
  EXPECT_EQ(render("{{ {1:'a', 2.5: 'b', true: 'c', none: 'd', 'x': 'e', 1.0: 'f'} }} {{ {1:2}[1.0] }} {{ {2.0: 'x'} }} "
                   "{{ {0: 1}[false] }} {{ {1: 2} == {1.0: 2} }} {{ {'a': 1}|dictsort }} {{ {3: 'c', 1: 'a'}|dictsort }} "
                   "{% for k in {1: 2, 'b': 3} %}{{ k }};{% endfor %} {{ {1: 'x'}.items()|list }} {{ {1: 'x'}.keys()|list }} "
                   "{{ {1: 'x'}|length }}"),
            "{1: 'f', 2.5: 'b', None: 'd', 'x': 'e'} 2 {2.0: 'x'} 1 True [('a', 1)] [(1, 'a'), (3, 'c')] 1;b; [(1, 'x')] [1] 1");
  EXPECT_EQ(render("{{ 1 in {1: 2} }} {{ '1' in {1: 2} }} {{ {1: 2}.get(1) }} {{ {'\xff': 1} }}"), "True False 2 {'\xff': 1}");
  EXPECT_THROW(render("{{ {[1]: 2} }}"), TemplateError);
}

// tojson's json.dumps arguments, as transformers passes them.
TEST(ChatFilters, TojsonArguments) {
  EXPECT_EQ(render("{{ {'b': 1, 'a': {'d': 2, 'c': [3, {'z': 1, 'y': 2}]}}|tojson(sort_keys=true, indent=2) }} "
                   "{{ {'a': '\xc3\xa9\xf0\x9f\x98\x80'}|tojson(ensure_ascii=true, separators=(',', ':')) }} "
                   "{{ [1, 2]|tojson(indent=1, separators=(', ', ': ')) }} {{ {1: 2, 1.5: 3, false: 4, none: 5}|tojson }} "
                   "{{ [1]|tojson(indent='\t') }}"),
            "{\n  \"a\": {\n    \"c\": [\n      3,\n      {\n        \"y\": 2,\n        \"z\": 1\n      }\n    ],\n"
            "    \"d\": 2\n  },\n  \"b\": 1\n} {\"a\":\"\\u00e9\\ud83d\\ude00\"} [\n 1, \n 2\n] "
            "{\"1\": 2, \"1.5\": 3, \"false\": 4, \"null\": 5} [\n\t1\n]");
}

// groupby, slice and truncate, and sort by several attributes (Python Jinja2 3.1's output).
TEST(ChatFilters, GroupbySliceTruncate) {
  EXPECT_EQ(render("{% for g in [{'r':'User','c':1},{'r':'bot','c':2},{'r':'user','c':3}]|groupby('r') %}{{ g.grouper }}={{ g.list|map(attribute='c')|list }};{% endfor %}|{% for k, items in [{'r':'b'},{'r':'a'},{'x':1}]|groupby('r', default='z') %}{{ k }}{{ items|length }}{% endfor %}|{{ [{'r':'B'},{'r':'b'}]|groupby('r', case_sensitive=true) }}|{{ [{'r':'B'},{'r':'b'}]|groupby('r') }}"),
            "bot=[2];User=[1, 3];|a1b1z1|[('B', [{'r': 'B'}]), ('b', [{'r': 'b'}])]|[('B', [{'r': 'B'}, {'r': 'b'}])]");
  EXPECT_EQ(render("{{ [1,2,3,4,5,6,7]|slice(3)|list }} {{ [1,2,3,4,5,6,7]|slice(3, 0)|list }} {{ [1,2]|slice(4)|list }} {{ []|slice(2)|list }}"),
            "[[1, 2, 3], [4, 5], [6, 7]] [[1, 2, 3], [4, 5, 0], [6, 7, 0]] [[1], [2], [], []] [[], []]");
  EXPECT_EQ(render("{{ 'hello world foo bar baz'|truncate(9) }}|{{ 'hello world foo bar baz'|truncate(9, true) }}|{{ 'hello world foo bar baz'|truncate(9, false, '..', 0) }}|{{ 'short'|truncate(3) }}|{{ 'abcdefghijklmnopqrstuvwxyz'|truncate(10) }}|{{ 'ab cd'|truncate(3, leeway=0) }}|{{ 'héllo wörld'|truncate(8, leeway=0) }}"),
            "hello...|hello ...|hello..|short|abcdefg...|...|héllo...");
  EXPECT_EQ(render("{{ [{'a':2,'b':'X'},{'a':1,'b':'y'},{'a':1,'b':'x'}]|sort(attribute='a, b', reverse=true) }}"),
            "[{'a': 2, 'b': 'X'}, {'a': 1, 'b': 'y'}, {'a': 1, 'b': 'x'}]");
}

}  // namespace
}  // namespace minfer::chat::test

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

}  // namespace
}  // namespace minfer::chat::test

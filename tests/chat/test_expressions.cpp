// Expressions with Python semantics. Expected strings are Python Jinja2 3.1's output.
#include <gtest/gtest.h>

#include "chat/value.h"
#include "render.h"

namespace minfer::chat::test {
namespace {

TEST(ChatExpr, Arithmetic) {
  EXPECT_EQ(render("{{ 7 // -2 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}|{{ 7 / 2 }}|{{ 1 + 2.5 }}|{{ true + 1 }}"),
            "-4|2|1024|3.5|3.5|2");
  EXPECT_EQ(render("{{ 10 // 3 }}|{{ 10.0 // 3 }}|{{ -10 // 3 }}|{{ 10 % -3 }}|{{ 2 ** -1 }}|{{ 1 / 3 }}|{{ 0.1 + 0.2 }}"),
            "3|3.0|-4|-2|0.5|0.3333333333333333|0.30000000000000004");
  EXPECT_EQ(render("{{ 3 * 'ab' }}|{{ [1,2] + [3] }}|{{ 'a' ~ 1 ~ none ~ true }}"),
            "ababab|[1, 2, 3]|a1NoneTrue");
}

TEST(ChatExpr, Precedence) {
  EXPECT_EQ(render("{{ -2 | abs }}|{{ - 2 ** 2 }}|{{ not 1 == 2 }}|{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|"
                   "{{ 2 ** 3 ** 2 }}|{{ 'a' ~ 'b' + 'c' }}|{{ 1 < 2 and 2 < 3 }}"),
            "2|4|True|7|9|64|abc|True");
  // A filter binds tighter than '+': only `content` is trimmed.
  EXPECT_EQ(render("{{ '[' + content | trim + ']' }}", R"({"content": "  hi  "})"), "[hi]");
  EXPECT_EQ(render("{{ msgs|length - 1 }}|{{ 'a' == 'a' == 'a' }}|{{ 1 < 2 < 2 }}", R"({"msgs": [1, 2, 3]})"),
            "2|True|False");
}

TEST(ChatExpr, PrintingIsPythonStr) {
  EXPECT_EQ(render("{{ 1.0 }}|{{ 1e20 }}|{{ 0.00001 }}|{{ 1e16 }}|{{ 123456789012345.6 }}|{{ -0.0 }}|{{ 1e-4 }}"),
            "1.0|1e+20|1e-05|1e+16|123456789012345.6|-0.0|0.0001");
  EXPECT_EQ(render("{{ [1, \"a\", none, true] }}|{{ {\"k\": 1.5} }}|{{ (1,) }}|{{ (1, 'a') }}"),
            "[1, 'a', None, True]|{'k': 1.5}|(1,)|(1, 'a')");
  EXPECT_EQ(render(R"({{ ["it's"] }}|{{ ['a"b'] }}|{{ ["x'y\"z"] }}|{{ x }}|{{ none }})"),
            R"(["it's"]|['a"b']|['x\'y"z']||None)");
}

TEST(ChatExpr, FloatRepr) {
  EXPECT_EQ(float_repr(0.5), "0.5");
  EXPECT_EQ(float_repr(100.0), "100.0");
  EXPECT_EQ(float_repr(1.5e-7), "1.5e-07");
  EXPECT_EQ(float_repr(2e300), "2e+300");
  EXPECT_EQ(float_repr(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(float_repr(0.1), "0.1");
}

TEST(ChatExpr, IndexingAndSlicing) {
  EXPECT_EQ(render("{{ 'h\xc3\xa9llo'[1] }}|{{ 'h\xc3\xa9llo'[::-1] }}|{{ [1,2,3,4,5][1:4:2] }}|{{ [1,2,3][-1] }}|"
                   "{{ 'abc'[-2:] }}|{{ [1,2,3][::-1] }}|{{ 'abc'[5:] }}|{{ 'hello'[::2] }}"),
            "\xc3\xa9|oll\xc3\xa9h|[2, 4]|3|bc|[3, 2, 1]||hlo");
  EXPECT_EQ(render("{{ m[0]['role'] }}|{{ m[0].content }}|{{ m[5] is defined }}|{{ m[0].nope is defined }}",
                   R"({"m": [{"role": "user", "content": "hi"}]})"),
            "user|hi|False|False");
}

TEST(ChatExpr, MembershipAndLogic) {
  EXPECT_EQ(render("{{ 'b' in 'abc' }}|{{ 2 not in [1,2] }}|{{ 'k' in {'k':1} }}|{{ not 0 }}|"
                   "{{ 1 if 0 else 2 }}|{{ 1 if 0 }}|{{ 0 or 'x' }}|{{ 1 and 'y' }}"),
            "True|False|True|True|2||x|y");
  EXPECT_EQ(render("{{ [1,2] == [1,2] }}|{{ 1 == 1.0 }}|{{ true == 1 }}|{{ [1,2] < [1,3] }}|{{ x == none }}|{{ x == y }}"),
            "True|True|True|True|False|True");
}

TEST(ChatExpr, StringMethods) {
  EXPECT_EQ(render(R"({{ "a,b,,c".split(",") }}|{{ "  a  b ".split() }}|{{ "a b c".split(" ", 1) }}|)"
                   R"({{ "a,b,c".rsplit(",", 1) }}|{{ "xxhix".strip("x") }}|{{ "hi  ".rstrip() }})"),
            "['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a,b', 'c']|hi|hi");
  EXPECT_EQ(render(R"({{ "Hello".startswith("He") }}|{{ "Hello".endswith(("x","lo")) }}|{{ "aaa".replace("a", "b", 2) }}|)"
                   R"({{ "{} and {}".format(1, "x") }}|{{ ", ".join(["a","b"]) }}|{{ "it's".title() }}|{{ "abc".find("c") }})"),
            "True|True|bba|1 and x|a, b|It'S|2");
  // Python's strip() knows Unicode whitespace (U+3000 ideographic space).
  EXPECT_EQ(render("{{ '\xe3\x80\x80 x \n'.strip() }}"), "x");
  EXPECT_EQ(render(R"({{ "%.2f" % 3.14159 }}|{{ "%5s|%-5s|" % ('a', 'b') }}|{{ "%(a)s" % {'a': 1} }}|{{ "%d items" % 3 }})"),
            "3.14|    a|b    ||1|3 items");
}

TEST(ChatExpr, ThinkSplitting) {
  // The Qwen3 idiom for separating reasoning from the answer.
  const char* src =
      "{%- set reasoning = '' -%}{%- if '</think>' in content -%}"
      "{%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') -%}"
      "{%- set content = content.split('</think>')[-1].lstrip('\\n') -%}{%- endif -%}[{{ reasoning }}][{{ content }}]";
  EXPECT_EQ(render(src, R"({"content": "<think>\nhmm\n</think>\n\nanswer"})"), "[hmm][answer]");
}

TEST(ChatExpr, DictMethodsAndGlobals) {
  EXPECT_EQ(render("{{ d | items | list }}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d.keys() | list }}|"
                   "{{ d.values() | list }}|{{ d.get('a') }}|{{ d.get('zz', 5) }}|{{ d.get('zz') }}",
                   R"({"d": {"b": 1, "a": 2}})"),
            "[('b', 1), ('a', 2)]|b=1;a=2;|['b', 'a']|[1, 2]|2|5|None");
  EXPECT_EQ(render("{{ range(3) | list }}|{{ range(1, 10, 3) | list }}|{{ range(5, 0, -2) | list }}|{{ dict(a=1, b='x') }}"),
            "[0, 1, 2]|[1, 4, 7]|[5, 3, 1]|{'a': 1, 'b': 'x'}");
}

TEST(ChatExpr, UnicodeCase) {
  EXPECT_EQ(render("{{ 'ÉCOLE' | lower }}|{{ 'straße' | upper }}|{{ 'ñandú' | capitalize }}|{{ '日本' | length }}"),
            "école|STRASSE|Ñandú|2");
}

}  // namespace
}  // namespace minfer::chat::test

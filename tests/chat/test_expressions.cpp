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

// Python's start/end arguments (code points, negative from the end) and the padding methods.
TEST(ChatExpr, StringMethodsAsPython) {
  EXPECT_EQ(render("{{ 'abc'.startswith('b',1) }} {{ 'abc'.find('c',1,2) }} {{ 'ab'.count('a',1) }} "
                   "{{ 'abcabc'.rfind('a', 0, -1) }} {{ 'abc'.find('', 5) }} {{ 'abc'.find('', 3) }} "
                   "{{ 'abc'.count('', 2, 1) }} {{ 'h\xc3\xa9llo'.find('l', -3) }} {{ 'abc'.endswith(('x','c'), 0, 3) }} "
                   "{{ 'abc'.endswith('b', 0, -1) }}"),
            "True -1 0 3 -1 3 0 2 True True");
  EXPECT_EQ(render("{{ 'abcabc'.rindex('b') }} {{ 'x'.ljust(4,'*') }}|{{ 'x'.rjust(4) }}|{{ 'ab'.center(5,'-') }}|"
                   "{{ 'abc'.center(6,'-') }}|{{ 'a'.center(4) }}|{{ '-42'.zfill(6) }}|{{ '42'.zfill(1) }}"),
            "4 x***|   x|--ab-|-abc--| a  |-00042|42");
  EXPECT_EQ(render("{{ 'prefix_x'.removeprefix('prefix_') }} {{ 'x.py'.removesuffix('.py') }} {{ 'x.py'.removesuffix('.js') }} "
                   "{{ 'a=b=c'.partition('=') }} {{ 'a=b=c'.rpartition('=') }} {{ 'abc'.partition('x') }} "
                   "{{ 'abc'.rpartition('x') }} {{ 'HeLLo'.swapcase() }} {{ '123'.isdecimal() }} {{ '12a'.isnumeric() }}"),
            "x x x.py ('a', '=', 'b=c') ('a=b', '=', 'c') ('abc', '', '') ('', '', 'abc') hEllO True False");
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

// Python's str.format specs, %c, 0x/0o/0b literals, list methods, splitlines' line
// boundaries, repr's escapes of unprintable characters and odd/even of floats (Python Jinja2
// 3.1's output).
TEST(ChatExpr, PythonFormattingAndLiterals) {
  EXPECT_EQ(render("{{ 'a\\nb\\r\\nc\\rd\\x0be\\x0cf\\x1cg\\x85h\\u2028i\\u2029j'.splitlines() }} {{ 'a\\nb\\r\\n'.splitlines(true) }} {{ ''.splitlines() }} {{ '\\n'.splitlines() }} {{ 'x\\r\\n\\r\\ny'.splitlines(keepends=true) }}"),
            "['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'] ['a\\n', 'b\\r\\n'] [] [''] ['x\\r\\n', '\\r\\n', 'y']");
  EXPECT_EQ(render("{{ 1.5 is even }} {{ 1.5 is odd }} {{ 3.0 is odd }} {{ 4.0 is even }} {{ -3.0 is odd }} {{ 1e300 is even }} {{ 3 is odd }}"),
            "False False True True True True True");
  EXPECT_EQ(render("{{ ['\\u00a0\\u2028'] }} {{ ['\\u200b\\ufeff\\u0085x'] }} {{ ['é😀日本', '\\U0001F600'] }} {{ {'k\\u00ad': '\\x7f\\x01'} }} {{ ['\\ue000', '\\u0378'] }} {{ ['a b', \"it's\", 'q\"'] }}"),
            "['\\xa0\\u2028'] ['\\u200b\\ufeff\\x85x'] ['é😀日本', '😀'] {'k\\xad': '\\x7f\\x01'} ['\\ue000', '\\u0378'] ['a b', \"it's\", 'q\"']");
  EXPECT_EQ(render("{{ '{:>5}|{:<5}|{:^5}|{:*^6}|{:05}|{:+d}|{: d}|{:,}|{:_}|{:x}|{:#x}|{:#X}|{:#b}|{:o}|{:010,}|{:08,}|{:c}'.format('a', 'b', 'c', 'de', 42, 5, 5, 1234567, 1234567, 255, 255, 255, 5, 8, 1234, 1234, 65) }}"),
            "    a|b    |  c  |**de**|00042|+5| 5|1,234,567|1_234_567|ff|0xff|0XFF|0b101|10|00,001,234|0,001,234|A");
  EXPECT_EQ(render("{{ '{:.2f}|{:10.3f}|{:<10.1f}|{:e}|{:.3E}|{:g}|{:.3g}|{:%}|{:.1%}|{:,.2f}|{}|{:.3}|{:.2}|{:f}|{:+.1f}|{:08.2f}|{:.0f}|{:#.0f}'.format(3.14159, 2.5, -1.25, 12345.678, 0.000123, 1e-7, 1234567.0, 0.25, 0.1234, 1234567.891, 0.1, 1.0, 1234.5, 1, -0.05, -3.14159, 2.5, 2.5) }}"),
            "3.14|     2.500|-1.2      |1.234568e+04|1.230E-04|1e-07|1.23e+06|25.000000%|12.3%|1,234,567.89|0.1|1.0|1.2e+03|1.000000|-0.1|-0003.14|2|2.");
  EXPECT_EQ(render("{{ '{0}{1}{0}|{0[1]}|{2[k]}|{2.k}|{0!r:>8}|{{}}|{1:s}|{1:.2s}|{a}'.format('x', 'y', {'k': 'v'}, a=1) }} {{ '{a}-{b}|{!r}|{:{w}}|{:>{w}.{p}f}|{x[k]}|{x.k}'.format('q', 3, 1.5, a=1, b=2, x={'k': 'v'}, w=6, p=2) }}"),
            "xyx||v|v|     'x'|{}|y|y|1 1-2|'q'|     3|  1.50|v|v");
  EXPECT_THROW(render("{{ '{}|{:>6}|{:d}|{:5}'.format(true, true, false, none if false else 3) }} {{ '{:>6}'.format('é') }} {{ '{:é>4}'.format(1) }} {{ '{:5}'.format(none) }}"), TemplateError);
  EXPECT_THROW(render("{{ '{}{0}'.format(1) }}"), TemplateError);
  EXPECT_THROW(render("{{ '{0}{}'.format(1) }}"), TemplateError);
  EXPECT_EQ(render("{{ '%c%c|%3c|%-3c|' % (65, 'é', 'x', 'y') }}"),
            "Aé|  x|y  |");
  EXPECT_EQ(render("{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 0X_ff }} {{ 0b1_0 }} {{ 1_000 }} {{ 0x1F + 1 }} {{ 0 }} {{ 0.5 }} {{ [0x10, 0b1] }}"),
            "31 15 5 255 2 1000 32 0 0.5 [16, 1]");
  EXPECT_EQ(render("{{ [1,2,1,'a'].count(1) }} {{ [1,2,1].index(1, 1) }} {{ (3,4).index(4) }} {{ [1,2].copy() }} {{ {'a': 1}.copy() }} {{ [1,2,3].index(3, -1) }} {{ [1,2].count('x') }}"),
            "2 2 1 [1, 2] {'a': 1} 2 0");
  EXPECT_EQ(render("{{ '{}|{:>6}|{:d}|{:5}'.format(true, true, false, 3) }} {{ '{:>6}'.format('é') }} {{ '{:é>4}'.format(1) }}"),
            "True|     1|0|    3      é ééé1");
  EXPECT_THROW(render("{{ '{:5}'.format(none) }}"), TemplateError);
  EXPECT_EQ(render("{{ '%.2s|%5.1s|%-4.3r|%05d|%.3d|%+.2e|%#x|%#o|% d|%12d' % ('abc', 'xyz', 'q', 42, 7, 12345.678, 255, 8, 3, 1) }}"),
            "ab|    x|'q' |00042|007|+1.23e+04|0xff|0o10| 3|           1");
  EXPECT_EQ(render("{{ '%x|%X|%o|%#x|%#06x|%-#6o|%+d|% 5d|%05d|%-5d|%.3x|%d|%i|%5.3d|%05.3d|%d' % "
                   "(-255, 255, -8, -255, 255, 8, 5, -3, -42, 7, 5, 3.9, true, 7, 7, -0.5) }}"),
            "-ff|FF|-10|-0xff|0x00ff|0o10  |+5|   -3|-0042|7    |005|3|1|  007|00007|0");
  // A width past what any layout needs is an error, not a huge string (or an exception
  // from the number's parse, as the fuzzer found).
  EXPECT_THROW(render("{{ '%22222222222222222222s' % 1 }}"), TemplateError);
  EXPECT_THROW(render("{{ '{:99999999999999999999}'.format(1) }}"), TemplateError);
  EXPECT_EQ(render("{{ '{:{}}|{:>{}}|{:{}.{}f}'.format('a', 5, 'b', 4, 3.14159, 8, 2) }}"), "a    |   b|    3.14");
}

}  // namespace
}  // namespace minfer::chat::test

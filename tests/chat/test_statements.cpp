// Statements: loops, assignments and scoping, namespaces, macros, call and filter blocks.
// Expected strings are Python Jinja2 3.1's output.
#include <gtest/gtest.h>

#include <cstdlib>

#include "render.h"

namespace minfer::chat::test {
namespace {

TEST(ChatStatements, LoopVariables) {
  EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
            "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}"), "-2;1-3;2-;");
  EXPECT_EQ(render("{% for x in 'ab' %}{{ loop.cycle('o', 'e') }}{{ x }}{% endfor %}"), "oaeb");
  EXPECT_EQ(render("{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }},{% endfor %}{{ loop.index }};{% endfor %}"),
            "113,214,1;123,224,2;");
}

TEST(ChatStatements, LoopForms) {
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.index }}{{ loop.last }};{% endfor %}"),
            "21False;42True;");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}|{% for k in {'x':1, 'y':2} %}{{ k }}{% endfor %}|"
                   "{% for c in 'h\xc3\xa9j' %}{{ c }}.{% endfor %}|{% for m in undefined_var %}x{% endfor %}"),
            "37|xy|h.\xc3\xa9.j.|");
  EXPECT_EQ(render("{% for m in msgs[::-1] %}{{ m }}{% endfor %}", R"({"msgs": [1, 2, 3]})"), "321");
}

TEST(ChatStatements, BreakContinue) {
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
                   "{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "0134");
}

TEST(ChatStatements, Scoping) {
  // Assignments in a loop body last one iteration; `if` does not open a scope.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}"), "231");
  EXPECT_EQ(render("{% for i in [1,2] %}{% if loop.first %}{% set z = 'a' %}{% endif %}{{ z }}{% endfor %}"), "a");
  EXPECT_EQ(render("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
  EXPECT_EQ(render("{% for m in ms %}{% set content = m %}{{ content }}{% endfor %}[{{ content }}]",
                   R"({"ms": ["a", "b"]})"),
            "ab[]");
  // A top-level `set` may rebind a variable passed in.
  EXPECT_EQ(render("{% set messages = messages[1:] %}{{ messages | length }}", R"({"messages": [1, 2, 3]})"), "2");
}

TEST(ChatStatements, SetForms) {
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}|{% set t = 1, 2 %}{{ t }}|"
                   "{% set s %}hello {{ 1 + 1 }}{% endset %}{{ s }}|{% set s2 | upper %}abc{% endset %}{{ s2 }}"),
            "21|(1, 2)|hello 2|ABC");
}

TEST(ChatStatements, Namespace) {
  EXPECT_EQ(render("{% set ns = namespace(found=false, n=0) %}{% for m in msgs %}{% if m == 2 %}"
                   "{% set ns.found = true %}{% endif %}{% set ns.n = ns.n + m %}{% endfor %}{{ ns.found }} {{ ns.n }}",
                   R"({"msgs": [1, 2, 3]})"),
            "True 6");
}

TEST(ChatStatements, Macros) {
  EXPECT_EQ(render("{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}"
                   "{{ greet('Bob') }}|{{ greet('Al', greeting='Hi') }}|{{ greet(greeting='Yo', name='Z') }}"),
            "Hello, Bob!|Hi, Al!|Yo, Z!");
  EXPECT_EQ(render("{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}|"
                   "{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}"),
            "(1, 2){'k': 3}|321");
  // Macros see their defining scope as it is when they are called.
  EXPECT_EQ(render("{% set x = 'outer' %}{% macro f() %}{{ x }}{% endmacro %}{% set x = 'later' %}{{ f() }}"),
            "later");
}

TEST(ChatStatements, CallAndFilterBlocks) {
  EXPECT_EQ(render("{% macro outer() %}[{{ caller() }}]{% endmacro %}{% call outer() %}inside{% endcall %}|"
                   "{% macro li(x) %}<{{ caller(x) }}>{% endmacro %}{% call(v) li(3) %}v={{ v }}{% endcall %}"),
            "[inside]|<v=3>");
  EXPECT_EQ(render("{% filter upper %}abc{{ 'd' }}{% endfilter %}|{% filter trim | upper %}  x  {% endfilter %}"),
            "ABCD|X");
  EXPECT_EQ(render("a{% generation %}b{% endgeneration %}c"), "abc");
}

TEST(ChatStatements, StrftimeNowUsesFakeClock) {
  setenv("MINFER_FAKE_NOW", "2025-03-05T09:07:00", 1);
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%A %B %-d, %H:%M:%S %j') }}"),
            "05 Mar 2025|Wednesday March 5, 09:07:00 064");
  unsetenv("MINFER_FAKE_NOW");
  EXPECT_EQ(render("{{ strftime_now('%Y') | length }}"), "4");
}

TEST(ChatStatements, ApplyTemplate) {
  const auto msgs = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  const char* chatml =
      "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}{{ extra }}";
  EXPECT_EQ(apply_template(chatml, msgs, true, "<s>", "</s>", {{"extra", "!"}}),
            "<s><|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n!");
  EXPECT_EQ(apply_template(chatml, msgs, false, "", "</s>"), "<|im_start|>user\nhi<|im_end|>\n");
}

TEST(ChatStatements, GuessFamily) {
  EXPECT_EQ(guess_template_family("{{ '<|im_start|>' + m.role }}"), "chatml");
  EXPECT_EQ(guess_template_family("<|start_header_id|>"), "llama3");
  EXPECT_EQ(guess_template_family("<|user|>{{ x }}<|end|>"), "phi3");
  EXPECT_EQ(guess_template_family("{{ x }}"), std::nullopt);
}

// Jinja2's with blocks, recursive loops, loop.changed and the cycler and joiner globals; the
// expected strings are Python Jinja2 3.1's.
TEST(ChatStatements, WithRecursiveLoopsAndHelpers) {
  const char* kTree = R"({"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]},
                                                        {"name": "d", "children": []}]},
                                  {"name": "e"}]})";
  EXPECT_EQ(render("{% with a = 1, b = 'x' %}{{ a }}{{ b }}{% endwith %}|{{ a }}|{% set a = 5 %}{% with a = a + 1, b = a %}{{ a }},{{ b }}{% endwith %}|{% with %}{% set z = 3 %}{{ z }}{% endwith %}{{ z }}"),
            "1x||6,5|3");
  EXPECT_EQ(render("{% for x in [1,1,2,3,3,1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}|{% for x in [1,2,3,4] %}{% if loop.changed(x // 2) %}[{{ x }}]{% endif %}{% endfor %}"),
            "1231|[1][2][4]");
  EXPECT_EQ(render("{% for item in tree recursive %}<{{ item.name }}:{{ loop.depth }}{% if item.children %}{{ loop(item.children) }}{% endif %}>{% endfor %}", kTree),
            "<a:1<b:2<c:3>><d:2>><e:1>");
  EXPECT_EQ(render("{% for item in tree recursive %}{{ loop.depth0 }}{{ item.name }}{% if item.children %}({{ loop(item.children) }}){% endif %}{% else %}empty{% endfor %}", kTree),
            "0a(1b(2c)1d)0e");
  EXPECT_EQ(render("{% for item in tree if item.name != 'b' recursive %}{{ item.name }}{{ loop.index }}/{{ loop.length }}{% if item.children %}[{{ loop(item.children) }}]{% endif %}{% endfor %}", kTree),
            "a1/2[d1/1]e2/2");
  EXPECT_EQ(render("{% for x in [[1, [2, [3]]], 4] recursive %}{% if x is iterable %}{{ loop(x) }}{% else %}{{ x }}@{{ loop.depth }} {% endif %}{% endfor %}"),
            "1@2 2@3 3@4 4@1 ");
  EXPECT_EQ(render("{% set c = cycler('odd', 'even') %}{% for x in range(5) %}{{ c.next() }}{{ c.current }};{% endfor %}{{ c.reset() }}{{ c.current }}"),
            "oddeven;evenodd;oddeven;evenodd;oddeven;Noneodd");
  EXPECT_EQ(render("{% set j = joiner(' | ') %}{% for x in [1,2,3] %}{{ j() }}{{ x }}{% endfor %} {% set k = joiner() %}{{ k() }}{{ k() }}{{ k() }}"),
            "1 | 2 | 3 , , ");
  EXPECT_EQ(render("{{ dict([(1, 'a'), ('b', 2)]) }} {{ dict({1: 2}, c=3) }} {{ dict(a=1) }}"),
            "{1: 'a', 'b': 2} {1: 2, 'c': 3} {'a': 1}");
  // A loop kept past its end cannot run again (its scope is gone).
  EXPECT_THROW(render("{% set ns = namespace(l=none) %}{% macro m() %}{% for x in [1] recursive %}{% set ns.l = loop %}"
                      "{% endfor %}{% endmacro %}{{ m() }}{{ ns.l([2]) }}"),
               TemplateError);
  // Each level of a recursive loop counts against the macro-call bound.
  EXPECT_THROW(render("{% for x in [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] recursive %}{{ loop(x) if x is iterable }}{% endfor %}"),
               TemplateError);
}

// Jinja2 lets a call pass more than a macro's parameters only where the body reads varargs
// or kwargs (Python Jinja2 3.1's output and errors).
TEST(ChatStatements, MacroArgumentsAsJinja2) {
  EXPECT_EQ(render("{% macro m(a) %}{{ a }}{{ varargs }}{% endmacro %}{{ m(1, 2) }}"), "1(2,)");
  EXPECT_EQ(render("{% macro m(a) %}{{ a }}{{ kwargs }}{% endmacro %}{{ m(1, b=2) }}"), "1{'b': 2}");
  EXPECT_EQ(render("{% macro m(a, b=3) %}{{ a }}{{ b }}{% endmacro %}{{ m(b=1, a=2) }}{{ m() }}"), "213");
  EXPECT_EQ(render("{% macro m(a) %}{% if true %}{% for x in varargs %}{{ x }}{% endfor %}{% endif %}{% endmacro %}"
                   "{{ m(1, 2, 3) }}"),
            "23");
  EXPECT_NE(std::string(render_error("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}").what())
                .find("macro 'm' takes not more than 1 argument(s)"),
            std::string::npos);
  EXPECT_NE(std::string(render_error("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, b=2) }}").what())
                .find("macro 'm' takes no keyword argument 'b'"),
            std::string::npos);
  EXPECT_NE(std::string(render_error("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, a=2) }}").what())
                .find("got multiple values for argument 'a'"),
            std::string::npos);
}

}  // namespace
}  // namespace minfer::chat::test

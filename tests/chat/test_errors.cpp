// Failures: syntax errors with their line, raise_exception's exact message, Jinja2's
// undefined semantics, and hostile input that must give an error rather than a crash.
#include <gtest/gtest.h>

#include <random>

#include "render.h"

namespace minfer::chat::test {
namespace {

TEST(ChatErrors, SyntaxErrorsNameTheLine) {
  auto parse_error = [](const std::string& src) -> TemplateError {
    try {
      Template t(src);
    } catch (const TemplateError& e) {
      return e;
    }
    ADD_FAILURE() << "parsed: " << src;
    return TemplateError(-1, "");
  };
  auto e = parse_error("line1\n{% if x %}\nok\n{% if %}\n{% endif %}{% endif %}");
  EXPECT_EQ(e.line(), 4);
  EXPECT_NE(std::string(e.what()).find("line 4"), std::string::npos) << e.what();
  EXPECT_NE(e.detail().find("expected an expression"), std::string::npos) << e.detail();

  e = parse_error("a\nb\n{% for x in y %}\n{{ x }}");
  EXPECT_NE(e.detail().find("'endfor'"), std::string::npos) << e.detail();
  EXPECT_EQ(parse_error("{{ 'abc }}").line(), 1);
  EXPECT_EQ(parse_error("\n\n{# never closed").line(), 3);
  EXPECT_EQ(parse_error("x\n{% endfor %}").line(), 2);
  EXPECT_EQ(parse_error("{% frobnicate %}").line(), 1);
  EXPECT_EQ(parse_error("{{ 1 + }}").line(), 1);
  EXPECT_EQ(parse_error("{{ a b }}").line(), 1);
  EXPECT_EQ(parse_error("{% raw %}never closed").line(), 1);
}

TEST(ChatErrors, RaiseExceptionMessageIsExact) {
  const auto e = render_error("a\n{{ raise_exception('Conversation roles must alternate ' ~ 2) }}");
  EXPECT_TRUE(e.raised());
  EXPECT_EQ(e.detail(), "Conversation roles must alternate 2");
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(std::string(e.what()).find("Conversation roles must alternate 2"), std::string::npos);
}

TEST(ChatErrors, RuntimeErrorsNameTheLine) {
  auto e = render_error("ok\n\n{{ 1 + 'a' }}");
  EXPECT_FALSE(e.raised());
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.detail().find("unsupported operand"), std::string::npos) << e.detail();
  e = render_error("{% macro m() %}\n{{ x.y }}\n{% endmacro %}{{ m() }}");
  EXPECT_EQ(e.line(), 2);  // the line inside the macro, where it failed
  EXPECT_EQ(render_error("{{ x | nofilter }}").detail(), "no filter named 'nofilter'");
  EXPECT_EQ(render_error("{{ 1 is notatest }}").detail(), "no test named 'notatest'");
}

TEST(ChatErrors, UndefinedSemantics) {
  // Printing, testing, iterating and `default` are fine; attributes of undefined are not.
  EXPECT_EQ(render("[{{ x }}]{{ x is defined }}{% for a in x %}a{% endfor %}{{ x | default(1) }}{% if not x %}n{% endif %}"),
            "[]False1n");
  EXPECT_EQ(render_error("{{ x.y }}").detail(), "'x' is undefined");
  EXPECT_EQ(render_error("{{ m[3].role }}", R"({"m": []})").detail(), "list object has no element 3");
  EXPECT_EQ(render_error("{{ d.a.b }}", R"({"d": {}})").detail(), "'dict object' has no attribute 'a'");
  EXPECT_EQ(render_error("{{ x + 1 }}").detail(), "'x' is undefined");
  EXPECT_EQ(render_error("{{ f() }}").detail(), "'f' is undefined");
  EXPECT_EQ(render_error("{% set n.a = 1 %}").detail(), "cannot assign attribute 'a' on undefined 'n'");
}

TEST(ChatErrors, BadVariables) {
  EXPECT_THROW(Template("x").render(nlohmann::ordered_json::array()), TemplateError);
  EXPECT_EQ(Template("x").render(nullptr), "x");
  EXPECT_THROW(apply_template("x", nlohmann::ordered_json::object(), true, "", ""), TemplateError);
}

TEST(ChatErrors, HostileInputGivesErrors) {
  EXPECT_THROW(render("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), TemplateError);
  EXPECT_THROW(render("{{ " + std::string(3000, '[') + " }}"), TemplateError);
  std::string nested;
  for (int i = 0; i < 1000; ++i) nested += "{% if true %}";
  EXPECT_THROW(render(nested), TemplateError);
  EXPECT_THROW(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), TemplateError);
  EXPECT_THROW(render("{{ range(1000000) | length }}"), TemplateError);
  EXPECT_THROW(render("{{ 'x' * 100000000000 }}"), TemplateError);
  EXPECT_THROW(render("{{ 9223372036854775807 + 1 }}"), TemplateError);
  EXPECT_THROW(render("{{ 1 // 0 }}"), TemplateError);
  EXPECT_THROW(render("{{ [][::0] }}"), TemplateError);
  EXPECT_THROW(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), TemplateError);
  EXPECT_THROW(render("{% set ns = namespace(l=[]) %}{% set ns.me = ns %}{{ ns | tojson }}"), TemplateError);
}

// Templates come inside model files: one that would run for hours or build gigabytes must stop
// with an error at the render budget (chat/render_budget.h) that bounds it.
TEST(ChatErrors, HostileTemplatesStopAtTheRenderBudget) {
  auto expect_error = [](const std::string& src, const std::string& why) {
    const std::string msg = render_error(src).what();
    EXPECT_NE(msg.find(why), std::string::npos) << src << "\n -> " << msg;
  };
  expect_error("{{ 'x' | center(100000000000) }}", "string too large");
  expect_error("{{ 'x'.center(9223372036854775807, '\xc3\xa9') }}", "string too large");
  expect_error("{{ '1'.zfill(9223372036854775807) }}", "string too large");
  expect_error("{{ [1, 2]|slice(1000000000000) }}", "list too large");
  expect_error("{{ '{:99999}'.format(1) }}", "too big");
  expect_error("{% set s = 'ab' * 1000000 %}{{ s.replace('a', s) }}", "string too large");
  expect_error("{{ ([('x' * 1000000)] * 100) | join }}", "string too large");
  expect_error("{% set ns = namespace(x=[1]) %}{% for i in range(12) %}{% set ns.x = [ns.x] * 8 %}{% endfor %}"
               "{{ ns.x | tojson }}", "string too large");
  expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "ran too long");
  expect_error("{{ range(100000) | unique | length }}", "ran too long");
  expect_error("{% set s = 'ab' * 1000000 %}{% for i in range(100000) %}{% set t = s ~ '' %}{% endfor %}",
               "built more than 1024 MiB");
  expect_error("{{ ('\\n' * 2000000).split('\\n') | length }}", "list too large");
  expect_error("{% macro f(n) %}{% for i in range(n) %}{{ f(n) }}{% endfor %}{% endmacro %}{{ f(2) }}",
               "macro calls nested too deeply (more than 100)");
  // Well inside the budget: a long loop, a large string and a deep macro recursion render.
  EXPECT_EQ(render("{% for i in range(100000) %}{{ i % 10 }}{% endfor %}").size(), 100000u);
  EXPECT_EQ(render("{{ ('ab' * 10000000) | length }}"), "20000000");
  EXPECT_EQ(render("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{{ n }}{% endmacro %}{{ f(50) | length }}"), "92");  // 0 to 50
}

TEST(ChatErrors, RandomInputNeverCrashes) {
  // Mutations of a real template: each must either render or throw TemplateError.
  const std::string base =
      "{%- set ns = namespace(a=[1, 2.5, 'x']) %}{% for m in messages if m.role != 'x' %}"
      "{{ m.content | trim ~ (loop.index * 2) }}{% if m['role'] is string %}{{ m.role[::-1] }}"
      "{% elif ns.a|length > 1 %}{{ ns.a | tojson(indent=2) }}{% else %}{% break %}{% endif %}"
      "{% endfor %}{# c #}{{ 'a' if x else 'b' }}{% macro q(a, b=2) %}{{ a ** b }}{% endmacro %}{{ q(3) }}";
  const std::string vars = R"({"messages": [{"role": "user", "content": " hi "}, {"role": 1}]})";
  ASSERT_EQ(render(base, vars), "hi2resu4[\n  1,\n  2.5,\n  \"x\"\n]b9");
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]|.,:'\"~=!<>*/ \nabcxyz0123";
  int rendered = 0, failed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = base;
    const int edits = 1 + int(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const size_t pos = rng() % s.size();
      switch (rng() % 3) {
        case 0: s[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: s.erase(pos, 1 + rng() % 3); break;
        default: s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
      }
    }
    try {
      render(s, vars);
      ++rendered;
    } catch (const TemplateError&) {
      ++failed;
    }
  }
  EXPECT_GT(rendered, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace minfer::chat::test

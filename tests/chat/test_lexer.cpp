// Whitespace control and lexing. Expected strings are what Python Jinja2 3.1 renders with
// transformers' settings (trim_blocks, lstrip_blocks, keep_trailing_newline=False).
#include <gtest/gtest.h>

#include "render.h"

namespace minfer::chat::test {
namespace {

TEST(ChatLexer, TrimAndLstripBlocks) {
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  // Comments are trimmed like blocks; variables are not.
  EXPECT_EQ(render("  {# c #}\nq"), "q");
  EXPECT_EQ(render("{{ 'a' }}\n{{ 'b' }}\n"), "a\nb");
  EXPECT_EQ(render("  {% for i in [1,2] %}\n    {{ i }}\n  {% endfor %}\n"), "    1\n    2\n");
}

TEST(ChatLexer, OptionsOff) {
  TemplateOptions raw{false, false, true};
  EXPECT_EQ(render("a\n  {% if true %}\nb\n{% endif %}\n", "{}", raw), "a\n  \nb\n\n");
  TemplateOptions keep{true, true, true};
  EXPECT_EQ(render("x\n", "{}", keep), "x\n");
  EXPECT_EQ(render("x\n"), "x");
  EXPECT_EQ(render("x\n\n"), "x\n");  // only one newline is dropped
}

TEST(ChatLexer, MinusAndPlusModifiers) {
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("{{- ' x ' -}}  |  {{ 'y' }}  \n  {{ 'z' -}}\n  w"), " x |  y  \n  zw");
  EXPECT_EQ(render("  {#- c -#}  \n  {# c2 #}\nq"), "q");
  // {%+ disables lstrip_blocks, +%} disables trim_blocks.
  EXPECT_EQ(render("{% if true %}  x{% endif %}\n  {%+ if true %}y{% endif %}\n{% if true +%}\nz{% endif %}"),
            "  x  y\nz");
  EXPECT_EQ(render("{%- for i in [1,2] -%}\n    {{ i }}\n{%- endfor -%}"), "12");
}

TEST(ChatLexer, RawAndComments) {
  EXPECT_EQ(render("{% raw %}{{ not }} {% if %}{% endraw %}|{# comment #}x"),
            "{{ not }} {% if %}|x");
  EXPECT_EQ(render("{% raw %}\n  x{% endraw %}\ny"), "\n  xy");
  // lstrip_blocks and '-' apply to the endraw tag as to any block tag.
  EXPECT_EQ(render("y {% raw %} {{ r }} \n {% endraw -%}\n"), "y  {{ r }} \n");
  EXPECT_EQ(render("{% raw -%}  a  {%- endraw %}"), "a");
  EXPECT_EQ(render("{{ 'x' }}{# multi\nline\ncomment #}{{ 'y' }}"), "xy");
}

TEST(ChatLexer, NewlinesAreNormalised) {
  EXPECT_EQ(render("line1\r\nline2\r\n{{ \"a\r\nb\" }}"), "line1\nline2\na\nb");
}

TEST(ChatLexer, Literals) {
  EXPECT_EQ(render(R"({{ "tab\there" }}|{{ 'esc\
' }}|{{ "\u00e9\x41" }}|{{ 'a' 'b' }}|{{ 1_000 }}|{{ 1.5e3 }}|{{ 'a\qb' }})"),
            "tab\there|esc|\xc3\xa9" "A|ab|1000|1500.0|a\\qb");
  EXPECT_EQ(render("{{ 'it\\'s' }}{{ \"say \\\"hi\\\"\" }}"), "it'ssay \"hi\"");
  EXPECT_EQ(render("{{ true }}{{ True }}{{ none }}{{ None }}{{ false }}"), "TrueTrueNoneNoneFalse");
  // Float literals out of range are Python's inf and 0.0, not errors (a fuzzer found the throw).
  EXPECT_EQ(render("{{ 77E776 }}|{{ -1e999 }}|{{ 1e-999 }}"), "inf|-inf|0.0");
}

TEST(ChatLexer, BracesInsideExpressions) {
  // '}}' inside a dict literal does not end the tag.
  EXPECT_EQ(render("{{ {'a': {'b': 1}}['a']['b'] }}"), "1");
  EXPECT_EQ(render("{{ '}}' ~ '%}' }}"), "}}%}");
}

}  // namespace
}  // namespace minfer::chat::test

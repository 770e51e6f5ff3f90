// Every case of ../shared/golden/templates/CASES.json (outputs of Hugging Face's renderers)
// must render byte for byte, or fail with the recorded raise_exception() message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "render.h"
#include "chat/builtin_templates.h"
#include "chat/template.h"
#include "common/test_data.h"

namespace {

using nlohmann::ordered_json;

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// template_file forms: a .jinja path, "<index.json>#<name>" + template_index, or
// "<tokenizer_config.json>#chat_template".
std::string template_source(const ordered_json& c) {
  const std::string ref = c.at("template_file").get<std::string>();
  const size_t hash = ref.find('#');
  if (hash == std::string::npos) return read_text(minfer::test::shared_path(ref));
  const ordered_json doc = ordered_json::parse(read_text(minfer::test::shared_path(ref.substr(0, hash))));
  if (doc.is_array()) return doc.at(c.at("template_index").get<size_t>()).at("template");
  return doc.at(ref.substr(hash + 1)).get<std::string>();
}

TEST(ChatGolden, AllCasesRender) {
  MINFER_REQUIRE_SHARED();
  const ordered_json cases =
      ordered_json::parse(read_text(minfer::test::shared_path("golden/templates/CASES.json")));
  ASSERT_TRUE(cases.is_array());
  ASSERT_GT(cases.size(), 200u);
  size_t passed = 0, n_errors = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("template_file").get<std::string>() + " [" +
                             std::to_string(c.value("template_index", -1)) + "] " +
                             c.at("case").get<std::string>();
    SCOPED_TRACE(name);
    if (c.contains("fake_now"))
      setenv("MINFER_FAKE_NOW", c.at("fake_now").get<std::string>().c_str(), 1);
    else
      unsetenv("MINFER_FAKE_NOW");
    bool ok = false;
    try {
      const minfer::chat::Template t(template_source(c));
      const std::string out = t.render(c.at("vars"));
      if (c.contains("expected")) {
        EXPECT_EQ(out, c.at("expected").get<std::string>());
        ok = out == c.at("expected").get<std::string>();
      } else {
        ADD_FAILURE() << "expected error '" << c.at("expected_error").get<std::string>()
                      << "' but rendered:\n" << out;
      }
    } catch (const minfer::chat::TemplateError& e) {
      if (c.contains("expected_error")) {
        ++n_errors;
        EXPECT_TRUE(e.raised()) << e.what();
        EXPECT_EQ(e.detail(), c.at("expected_error").get<std::string>());
        ok = e.raised() && e.detail() == c.at("expected_error").get<std::string>();
      } else {
        ADD_FAILURE() << "unexpected error: " << e.what();
      }
    }
    passed += ok;
  }
  unsetenv("MINFER_FAKE_NOW");
  std::printf("chat template golden cases: %zu/%zu passed (%zu expected errors)\n", passed,
              cases.size(), n_errors);
  EXPECT_EQ(passed, cases.size());
}

}  // namespace

// The built-in ChatML (llama.cpp's --chat-template chatml, and its chat paths' template for a
// model without one) renders llama.cpp's CHATML_TEMPLATE_SRC text: its test conversation.
TEST(BuiltinTemplates, ChatmlAsLlamaCpp) {
  const auto t = minfer::chat::builtin_template("chatml");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(minfer::chat::test::render(*t, R"({"messages": [
      {"role": "system", "content": "You are a helpful assistant"}, {"role": "user", "content": "Hello"},
      {"role": "assistant", "content": "Hi there"}, {"role": "user", "content": "How are you?"}],
      "add_generation_prompt": true})"),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(minfer::chat::test::render(*t, R"({"messages": [{"role": "user", "content": "Hi"}]})"),
            "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_FALSE(minfer::chat::builtin_template("llama3").has_value());
  EXPECT_FALSE(minfer::chat::builtin_template("").has_value());
}

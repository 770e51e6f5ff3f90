// `minfer template`: renders a template file or a model's template; bad JSON is one error line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sys/wait.h>
#include <filesystem>
#include <fstream>

#include "common/test_data.h"

namespace {

struct Result {
  int status;
  std::string out;
};

Result run(const std::string& args) {
  const std::string cmd = std::string(MINFER_BINARY) + " template " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("minfer_chat_cli_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

TEST(ChatCli, RendersTemplateFile) {
  const std::string tmpl = temp_file(
      "t.jinja",
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}{{ bos_token is defined }}{{ extra }}\n");
  const std::string msgs = temp_file("m.json", R"([{"role": "user", "content": "hi"}])");
  auto r = run("--file " + tmpl + " --messages @" + msgs + " --add-generation-prompt --vars '{\"extra\": 7}'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "<user>hi<assistant>False7");
  r = run("--file " + tmpl + " --messages '[{\"role\": \"system\", \"content\": \"s\"}]'");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "<system>sFalse");
}

TEST(ChatCli, BadInputIsOneErrorLine) {
  const std::string tmpl = temp_file("t2.jinja", "{{ raise_exception('no system role') }}");
  auto r = run("--file " + tmpl + " --messages '[{\"role\": '");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("--messages: invalid JSON"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = run("--file " + tmpl + " --messages '[]'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("no system role"), std::string::npos) << r.out;
  r = run("--file /nonexistent/t.jinja --messages '[]'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("/nonexistent/t.jinja"), std::string::npos) << r.out;
}

TEST(ChatCli, UsesTheModelsTemplateAndTokens) {
  MINFER_REQUIRE_SHARED();
  // The synthetic Qwen2 model carries the Qwen2.5 ChatML template; eos is <|im_end|>.
  const auto r = run("-m " + minfer::test::shared_path("models/tiny-qwen2-q8_0.gguf") +
                     " --messages '[{\"role\": \"user\", \"content\": \"Hi\"}]' --add-generation-prompt");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out,
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace

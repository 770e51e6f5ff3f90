// `minfer template`: renders a chat template (a model's own, or a Jinja file) for a list of
// messages and prints the exact prompt text, to inspect what a model will be fed.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/template.h"
#include "cli/command.h"
#include "common/error.h"
#include "gguf/gguf.h"

namespace {

using namespace minfer;
using json = nlohmann::ordered_json;

std::string read_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail("{}: no such {} file", path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read the {} file", path, what);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// JSON text, or @FILE for a file holding it.
json parse_json_arg(const std::string& arg, const char* flag) {
  std::string text = arg;
  std::string where = flag;
  if (!arg.empty() && arg[0] == '@') {
    text = read_file(arg.substr(1), "JSON");
    where = arg.substr(1);
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail("{}: invalid JSON: {}", where, e.what());
  }
}

// The text of token `id_key` (e.g. tokenizer.ggml.bos_token_id) of the model's vocabulary.
std::optional<std::string> token_text(const gguf::File& f, const char* id_key,
                                      const std::vector<std::string>& tokens) {
  const auto id = f.get_uint(id_key);
  if (!id) return std::nullopt;
  if (*id >= tokens.size())
    fail("{}: {} is {} but the vocabulary has {} tokens", f.path(), id_key, *id, tokens.size());
  return tokens[*id];
}

int run_template(int argc, char** argv) {
  CLI::App app{"Render a chat template for a list of messages and print the prompt",
               "minfer template"};
  std::string model, file, messages_arg, vars_arg;
  bool add_generation_prompt = false;
  auto* m_opt = app.add_option("-m,--model", model, "GGUF model: use its tokenizer.chat_template");
  auto* f_opt = app.add_option("--file", file, "Jinja chat template file");
  m_opt->excludes(f_opt);
  app.add_option("--messages", messages_arg, "messages as a JSON array, or @FILE")->required();
  app.add_flag("--add-generation-prompt", add_generation_prompt,
               "end with the header of an assistant turn");
  app.add_option("--vars", vars_arg,
                 "extra template variables as a JSON object, or @FILE (e.g. tools, enable_thinking)");
  cli::parse(app, argc, argv);
  if (model.empty() && file.empty()) fail("give a model (-m MODEL.gguf) or a template (--file FILE)");

  json vars = json::object();
  const json messages = parse_json_arg(messages_arg, "--messages");
  if (!messages.is_array()) fail("--messages: expected a JSON array of messages, got {}", messages.type_name());

  std::string source;
  if (!model.empty()) {
    const auto f = gguf::File::open(model);
    const auto tmpl = f->get_string("tokenizer.chat_template");
    if (!tmpl) fail("{}: the model has no tokenizer.chat_template", model);
    source = *tmpl;
    const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
    if (auto bos = token_text(*f, "tokenizer.ggml.bos_token_id", tokens)) vars["bos_token"] = *bos;
    if (auto eos = token_text(*f, "tokenizer.ggml.eos_token_id", tokens)) vars["eos_token"] = *eos;
  } else {
    source = read_file(file, "chat template");
  }
  vars["messages"] = messages;
  vars["add_generation_prompt"] = add_generation_prompt;
  if (!vars_arg.empty()) {
    const json extra = parse_json_arg(vars_arg, "--vars");
    if (!extra.is_object()) fail("--vars: expected a JSON object, got {}", extra.type_name());
    for (auto it = extra.begin(); it != extra.end(); ++it) vars[it.key()] = it.value();
  }

  const std::string label = model.empty() ? file : model + " (tokenizer.chat_template)";
  std::string out;
  try {
    out = chat::Template(source).render(vars);
  } catch (const chat::TemplateError& e) {
    fail("{}: {}", label, e.what());
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

MINFER_COMMAND(template, "render a chat template for a list of messages", run_template);

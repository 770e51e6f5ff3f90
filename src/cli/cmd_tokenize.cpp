// `minfer tokenize`: like llama.cpp's llama-tokenize. Prints "ID -> 'piece'" lines, or one
// JSON array with --ids. MODEL is a GGUF file or an HF tokenizer.json.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "common/error.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace {

int run_tokenize(int argc, char** argv) {
  CLI::App app{"Tokenize text with a model's tokenizer (like llama-tokenize)", argv[0]};
  std::string model, prompt, file;
  bool ids_only = false, no_bos = false, no_parse_special = false;
  app.add_option("-m,--model", model, "GGUF model (or an HF tokenizer.json)")->required();
  auto* p = app.add_option("-p,--prompt", prompt, "text to tokenize");
  auto* f = app.add_option("-f,--file", file, "read the text from this file");
  p->excludes(f);
  f->excludes(p);
  app.add_flag("--ids", ids_only, "print only the ids, as one JSON array");
  app.add_flag("--no-bos", no_bos, "do not add BOS even if the model wants it");
  app.add_flag("--no-parse-special", no_parse_special,
               "treat special-token texts in the prompt as plain text");
  minfer::cli::parse(app, argc, argv);
  if (p->count() == 0 && f->count() == 0) minfer::fail("one of -p/--prompt or -f/--file is required");
  if (f->count()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) minfer::fail("{}: cannot open", file);
    std::stringstream ss;
    ss << in.rdbuf();
    prompt = ss.str();
  }

  std::unique_ptr<minfer::gguf::File> gguf;
  std::unique_ptr<minfer::tok::Tokenizer> tok;
  if (model.size() >= 5 && model.compare(model.size() - 5, 5, ".json") == 0) {
    tok = minfer::tok::Tokenizer::from_hf(model);
  } else {
    gguf = minfer::gguf::File::open(model);
    tok = minfer::tok::Tokenizer::from_gguf(*gguf);
  }
  const bool add_special = tok->add_bos() && !no_bos;
  const auto ids = tok->encode(prompt, add_special, !no_parse_special);

  if (ids_only) {
    std::string out = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out += ", ";
      out += std::to_string(ids[i]);
    }
    out += "]\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  for (int32_t id : ids) {
    const std::string piece = tok->token_to_piece(id, true);
    std::printf("%6d -> '", id);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::printf("'\n");
  }
  return 0;
}

}  // namespace

MINFER_COMMAND(tokenize, "tokenize text and print the token ids", run_tokenize);

// The `minfer` executable end to end: llama.cpp's greedy text on stories260K, seeds, stop
// strings, chat (incremental prefill, sessions), demo, gen-model, and every bad-input case
// with its exit code and message.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/test_data.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// A value as llama-embedding prints it ("%9.6f").
std::string fmt_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%9.6f", v);
  return buf;
}

struct Result {
  int code = -1;
  std::string out, err;
};

std::string q(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("minfer-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `minfer ARGS` (ARGS already shell-quoted) with `input` on stdin.
  Result run(const std::string& args, const std::string& input = "") {
    spit(dir_ / "stdin", input);
    const std::string cmd = std::string(MINFER_BINARY) + " " + args + " <" + q((dir_ / "stdin").string()) +
                            " >" + q((dir_ / "stdout").string()) + " 2>" + q((dir_ / "stderr").string());
    const int st = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp(dir_ / "stdout");
    r.err = slurp(dir_ / "stderr");
    return r;
  }

  // An error run: the code, one line on stderr, and the message naming what is wrong.
  void expect_error(const std::string& args, int code, const std::vector<std::string>& needles) {
    const Result r = run(args);
    EXPECT_EQ(r.code, code) << args << "\nstderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
    if (code == 1) {
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
    }
    for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << args << "\nstderr: " << r.err << "\nmissing: " << n;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  }

  fs::path dir_;
};

const std::string kStories = "models/stories260K.gguf";
const std::string kQwen2 = "models/tiny-qwen2-q8_0.gguf";

std::string stories() { return q(minfer::test::shared_path(kStories)); }
std::string qwen2() { return q(minfer::test::shared_path(kQwen2)); }

// ChatML without Qwen's default system message: the first turn renders exactly the golden
// chat-hi prompt.
const char* kChatml =
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

}  // namespace

TEST_F(Cli, StoriesGreedyMatchesLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  const json g = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.greedy64.json")));
  ASSERT_EQ(g["cases"].size(), 3u);
  for (const auto& c : g["cases"]) {
    const std::string prompt = c["prompt_text"];
    // The goldens were made with an F32 KV cache (their settings); the default is F16.
    const Result r = run(stories() + " " + q(prompt) + " -n 64 --temp 0 --kv-type f32");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, c["greedy"]["text"].get<std::string>()) << "prompt: " << prompt;
    EXPECT_NE(r.err.find("prompt eval time"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("64 generated"), std::string::npos) << r.err;
  }
}

// -l TOKEN_ID(+/-)BIAS as llama.cpp's: banning the greedy first token (",") of the golden
// continuation makes llama.cpp's second choice (" there") come first.
TEST_F(Cli, LogitBiasBansAToken) {
  MINFER_REQUIRE_SHARED();
  const json g = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.once-upon-a-time.json")));
  const json& top = g["positions"][g["prompt_ids"].size() - 1]["top"];
  const std::string ban = std::to_string(top[0]["id"].get<int>()) + "-inf";
  const Result r = run(stories() + " " + q(g["prompt_text"]) + " -n 1 --temp 0 --kv-type f32 -l " + ban);
  ASSERT_EQ(r.code, 0) << r.err;
  // run prints the first piece without its SentencePiece space, as llama.cpp: put it back.
  const Result t = run("tokenize -m " + stories() + " -p " + q(g["prompt_text"].get<std::string>() + " " + r.out) + " --ids");
  ASSERT_EQ(t.code, 0) << t.err;
  const json ids = json::parse(t.out);
  ASSERT_EQ(ids.size(), g["prompt_ids"].size() + 1) << r.out << " / " << t.out;
  EXPECT_EQ(ids.back(), top[1]["id"]) << r.out;
}

TEST_F(Cli, RunSubcommandStdinAndFileGiveTheSameText) {
  MINFER_REQUIRE_SHARED();
  const Result a = run(stories() + " 'Once upon a time' -n 20 --temp 0 --quiet");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_TRUE(a.err.empty()) << "--quiet still printed: " << a.err;
  const Result b = run("run -m " + stories() + " -p 'Once upon a time' -n 20 --temp 0 -q");
  EXPECT_EQ(b.out, a.out);
  const Result c = run(stories() + " -n 20 --temp 0 -q", "Once upon a time\n");
  EXPECT_EQ(c.out, a.out);
  spit(dir_ / "prompt.txt", "Once upon a time");
  const Result d = run(stories() + " -f " + q((dir_ / "prompt.txt").string()) + " -n 20 --temp 0 -q");
  EXPECT_EQ(d.out, a.out);
}

TEST_F(Cli, SameSeedSameText) {
  MINFER_REQUIRE_SHARED();
  auto gen = [&](int seed) {
    const Result r = run(stories() + " 'Once upon a time' -n 40 --temp 1.0 -q -s " + std::to_string(seed));
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  };
  const std::string a = gen(7);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(gen(7), a);
  const std::string b = gen(8), c = gen(9);
  EXPECT_FALSE(a == b && b == c) << "three seeds gave the same text";
}

TEST_F(Cli, StopStringSplitAcrossTokensIsCaughtAndNotPrinted) {
  MINFER_REQUIRE_SHARED();
  const json g = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.greedy64.json")));
  const std::string full = g["cases"][0]["greedy"]["text"];
  const std::string stop = "girl na";  // "girl" + " named": two tokens of the 512-token vocabulary
  ASSERT_NE(full.find(stop), std::string::npos);
  // --stop before the positional prompt must not swallow it; a second stop that never occurs.
  const Result r = run(stories() + " --stop " + q(stop) +
                       " --stop zzzz 'Once upon a time' -n 64 --temp 0 --kv-type f32");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, full.substr(0, full.find(stop)));
  EXPECT_NE(r.err.find("stop string"), std::string::npos) << r.err;
}

TEST_F(Cli, VerboseShowsEachGraphBuiltOnceOver500Tokens) {
  MINFER_REQUIRE_SHARED();
  const Result r = run(stories() + " 'Once upon a time' -n 500 --ignore-eos --temp 0 --verbose");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("500 generated"), std::string::npos) << r.err;
  // 1 prefill + 499 decode evaluations: 2 builds, 498 reuses.
  EXPECT_NE(r.err.find("graphs: prefill built 1x, decode built 1x, reused 498x over 500 evaluations"),
            std::string::npos)
      << r.err;
  // --log-file gets the same messages, stdout none of them.
  const auto log = dir_ / "run.log";
  const Result r2 = run(stories() + " 'Once upon a time' -n 8 --temp 0 --verbose --log-file " + q(log.string()));
  ASSERT_EQ(r2.code, 0) << r2.err;
  const std::string logged = slurp(log);
  EXPECT_NE(logged.find("prompt eval time"), std::string::npos) << logged;
  EXPECT_NE(logged.find("graphs: prefill built 1x"), std::string::npos) << logged;
  EXPECT_EQ(r2.out.find("eval time"), std::string::npos);
}

TEST_F(Cli, DumpGraphWritesDotAndJson) {
  MINFER_REQUIRE_SHARED();
  const auto dot = dir_ / "g.dot", js = dir_ / "g.json";
  const Result r = run(stories() + " 'Once upon a time' --dump-graph " + q(dot.string()) +
                       " --dump-graph-json " + q(js.string()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("(\\d+) nodes"))) << r.err;
  const json j = json::parse(slurp(js));
  EXPECT_EQ(j["nodes"].size(), std::stoul(m[1]));
  EXPECT_NE(slurp(dot).find("digraph"), std::string::npos);
  // As executed: every node assigned, every live node placed in an arena; only the KV nodes
  // (persistent regions) have none.
  int ffn = 0;
  for (const auto& n : j["nodes"]) {
    EXPECT_EQ(n["backend"], "CPU") << n["name"];
    const std::string op = n["op"];
    ffn += op == "FusedFFN";
    if (op == "KvStore" || op == "KvLoad" || op == "Silu") EXPECT_TRUE(n["buffer"].is_null()) << n["name"];
    else EXPECT_TRUE(n["buffer"].is_object() && n["buffer"]["size"].get<int64_t>() > 0) << n["name"];
    for (const char* k : {"id", "name", "op", "payload", "src", "shape", "dtype"})
      EXPECT_TRUE(n.contains(k)) << k;
  }
  EXPECT_EQ(ffn, 5);  // stories260K: one per block
  EXPECT_EQ(j["params"]["n_tokens"], j["nodes"][0]["shape"][0]);
}

TEST_F(Cli, ChatPrefillsOnlyTheNewTokensEachTurn) {
  MINFER_REQUIRE_SHARED();
  spit(dir_ / "chatml.jinja", kChatml);
  const Result r = run("chat " + qwen2() + " --chat-template-file " + q((dir_ / "chatml.jinja").string()) +
                           " --temp 0 -n 8 --verbose",
                       "Hi\nHow are you?\n");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::regex re("prefilled (\\d+) new tokens \\(evaluated (\\d+)\\) after (\\d+) cached; context (\\d+)/");
  std::vector<std::array<long, 4>> turns;
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), re); it != std::sregex_iterator(); ++it)
    turns.push_back({std::stol((*it)[1]), std::stol((*it)[2]), std::stol((*it)[3]), std::stol((*it)[4])});
  ASSERT_EQ(turns.size(), 2u) << r.err;
  // Turn 1: the golden chat-hi prompt, 9 tokens, nothing cached.
  EXPECT_EQ(turns[0][0], 9);
  EXPECT_EQ(turns[0][1], 9);
  EXPECT_EQ(turns[0][2], 0);
  // Turn 2: the cache holds turn 1; only the new suffix (end of the reply + the user turn +
  // the generation prompt, ~15 tokens) is evaluated, not the whole conversation.
  EXPECT_EQ(turns[1][2], turns[0][3]);
  EXPECT_EQ(turns[1][1], turns[1][0]);
  EXPECT_GT(turns[1][0], 5);
  EXPECT_LE(turns[1][0], 20);
  EXPECT_LT(turns[1][0], turns[1][3] / 2);
}

// A chat with a draft model: each turn's reply is the one without it (same seed), also once
// the caches hold earlier turns.
TEST_F(Cli, ChatWithADraftModel) {
  MINFER_REQUIRE_SHARED();
  spit(dir_ / "chatml.jinja", kChatml);
  const std::string args = "chat " + qwen2() + " --chat-template-file " + q((dir_ / "chatml.jinja").string()) +
                           " -s 7 -n 12 --verbose";
  const std::string input = "Hi\nHow are you?\nTell me more.\n";
  const Result plain = run(args, input);
  const Result spec = run(args + " -md " + qwen2() + " --draft-p-min 0 --draft-max 3", input);
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(spec.code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_EQ(std::count(spec.out.begin(), spec.out.end(), '\n'), 3);
  EXPECT_NE(spec.err.find("tokens drafted"), std::string::npos) << spec.err;
}

// llama.cpp's spellings: -ngl and -fa change nothing on the CPU (a warning where they would),
// -b/-ub cut the prompt into smaller decode calls with the same text, -ctk/-ctv set the cache
// type, escapes in -p are processed unless --no-escape, and its flags without a counterpart are
// named with their long form; --mlock locks the model in RAM (or warns that the system would not).
TEST_F(Cli, LlamaCppFlagSpellings) {
  MINFER_REQUIRE_SHARED();
  const json g = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.greedy64.json")));
  const auto& c = g["cases"][0];
  const std::string want = c["greedy"]["text"];
  const std::string base = stories() + " " + q(c["prompt_text"]) + " -n 64 --temp 0";
  Result r = run(base + " -ngl 99 -fa on -b 2 -ub 3 --jinja -ctk f32 -ctv f32");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_NE(r.err.find("-ngl 99: minfer runs on the CPU"), std::string::npos) << r.err;
  r = run(base + " --kv-type f32 --no-mmap --verbose");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_NE(r.err.find("read into memory (--no-mmap)"), std::string::npos) << r.err;
  r = run(base + " --kv-type f32 -fa off -ngl 0");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_EQ(r.err.find("-ngl"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-fa off"), std::string::npos) << r.err;

  // "\\n" in -p is a newline, as in llama.cpp (the same as a file holding one); --no-escape keeps
  // the backslash.
  const Result nl = run(stories() + " " + q("Once upon a time\\nThe dog") + " -n 12 --temp 0 --verbose");
  spit(dir_ / "prompt.txt", "Once upon a time\nThe dog\n");
  const Result real = run(stories() + " -f " + q((dir_ / "prompt.txt").string()) + " -n 12 --temp 0 --verbose --no-escape");
  ASSERT_EQ(nl.code, 0) << nl.err;
  EXPECT_EQ(nl.out, real.out);
  auto n_prompt = [](const Result& x) {
    std::smatch m;
    return std::regex_search(x.err, m, std::regex("prompt: ([0-9]+) tokens")) ? std::stoi(m[1]) : -1;
  };
  EXPECT_EQ(n_prompt(nl), n_prompt(real));
  const Result tabs = run(stories() + " " + q("Once\\t\\t\\t\\t\\t\\t") + " -n 1 --verbose");
  const Result kept = run(stories() + " " + q("Once\\t\\t\\t\\t\\t\\t") + " -n 1 --verbose --no-escape");
  EXPECT_EQ(n_prompt(tabs), 8) << tabs.err;   // BOS, Once, six tabs
  EXPECT_EQ(n_prompt(kept), 14) << kept.err;  // six backslashes and six t's
  // The stop strings' escapes too: a newline stops the text before it.
  const Result stop = run(base + " --kv-type f32 --stop " + q("\\n"));
  ASSERT_EQ(stop.code, 0) << stop.err;
  ASSERT_NE(want.find('\n'), std::string::npos);
  EXPECT_EQ(stop.out, want.substr(0, want.find('\n')));

  expect_error(base + " -hf org/model", 2, {"-hf (llama.cpp's --hf-repo) is not a minfer option"});
  expect_error(base + " --lora=a.gguf", 2, {"--lora (llama.cpp's) is not a minfer option: LoRA adapters"});
  r = run(base + " --kv-type f32 --mlock --verbose");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_TRUE(r.err.find("--mlock: the model's weights are locked in RAM") != std::string::npos ||
              r.err.find("--mlock: cannot lock the model in RAM") != std::string::npos)
      << r.err;
  r = run(base + " --kv-type f32 -np 4 -cb -kvu");  // llama-server's slots: one here, a warning
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_NE(r.err.find("-np 4: minfer serves one request at a time"), std::string::npos) << r.err;
  expect_error(base + " -np 0", 1, {"-np 0"});
  expect_error(base + " -ot x=CPU", 2, {"--override-tensor"});
  expect_error(base + " -ctk q8_0 -ctv f16", 1, {"one type for K and V"});
  expect_error(base + " -fa maybe", 1, {"-fa maybe"});
  expect_error(base + " -ngl many", 1, {"-ngl many"});
  expect_error(base + " -b 0", 1, {"-b 0"});
  expect_error(base + " -cnv", 2, {"minfer chat"});
  // -sp (llama.cpp's --special): control tokens' text is printed; without it, not.
  const std::string eos = stories() + " Once -n 3 --temp 0 --ignore-eos -l 2+100";
  EXPECT_EQ(run(eos + " -sp").out, "</s></s></s>");
  EXPECT_EQ(run(eos).out, "");
}

// `minfer embed` (llama-embedding): one vector per line of the prompt, the same numbers in every
// output format, normalized as --embd-normalize says, a cosine matrix whose diagonal is 1.
TEST_F(Cli, EmbedAsLlamaEmbedding) {
  MINFER_REQUIRE_SHARED();
  const std::string text = q("Once upon a time\\nThe dog ran\\nA cat");
  Result r = run("embed " + stories() + " -p " + text + " --pooling mean --embd-output-format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["data"].size(), 3u);
  std::vector<std::vector<double>> vecs;
  for (const json& d : j["data"]) vecs.push_back(d["embedding"].get<std::vector<double>>());
  for (const auto& v : vecs) {
    ASSERT_EQ(v.size(), 64u);
    double n2 = 0;
    for (double x : v) n2 += x * x;
    EXPECT_NEAR(n2, 1.0, 1e-5);  // Euclidean by default
  }
  // The bare array holds the same numbers; the plain text prints the first 16 of each and the
  // cosine matrix.
  r = run("embed " + stories() + " -p " + text + " --pooling mean --embd-output-format array");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).get<std::vector<std::vector<double>>>(), vecs);
  r = run("embed " + stories() + " -p " + text + " --pooling mean");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(fmt_value(vecs[1][0])), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cosine similarity matrix:"), std::string::npos);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n +1\.00 +0\.[0-9]{2} +0\.[0-9]{2} Once upon)"))) << r.out;
  // Other norms: taxicab sums to 1, int16 scaling peaks at 32760, none is the raw mean.
  r = run("embed " + stories() + " -p " + q("Once upon a time") + " --pooling mean --embd-output-format array --embd-normalize 1");
  double sum_abs = 0;
  for (double x : json::parse(r.out)[0].get<std::vector<double>>()) sum_abs += std::abs(x);
  EXPECT_NEAR(sum_abs, 1.0, 1e-5);
  r = run("embed " + stories() + " -p " + q("Once upon a time") + " --pooling mean --embd-output-format array --embd-normalize 0");
  double peak = 0;
  for (double x : json::parse(r.out)[0].get<std::vector<double>>()) peak = std::max(peak, std::abs(x));
  EXPECT_EQ(peak, 32760);
  // Pooling none: a line per token (BOS and four).
  r = run("embed " + stories() + " -p " + q("Once upon a time") + " --pooling none");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("embedding 4: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("embedding 5: "), std::string::npos) << r.out;
  // stories260K names no pooling type: one must be given.
  expect_error("embed " + stories() + " -p hi", 1, {"pooling"});
  expect_error("embed " + stories() + " -p hi --pooling max", 2, {"--pooling"});
  expect_error("embed " + stories(), 2, {"-p"});
}

// llama.cpp's --chat-template (the Jinja text itself) and -sysf (the system message from a file)
// give what --chat-template-file and --system give; a built-in template's name is refused.
TEST_F(Cli, ChatTemplateTextAndSystemFile) {
  MINFER_REQUIRE_SHARED();
  spit(dir_ / "chatml.jinja", kChatml);
  spit(dir_ / "system.txt", "You are terse.\n");
  const std::string base = qwen2() + " Hi --temp 0 -n 6 --verbose";
  const Result by_file = run(base + " --chat-template-file " + q((dir_ / "chatml.jinja").string()) + " --system " + q("You are terse."));
  const Result by_text = run(base + " --chat-template " + q(kChatml) + " -sysf " + q((dir_ / "system.txt").string()));
  ASSERT_EQ(by_file.code, 0) << by_file.err;
  ASSERT_EQ(by_text.code, 0) << by_text.err;
  EXPECT_EQ(by_text.out, by_file.out);
  std::smatch a, b;
  ASSERT_TRUE(std::regex_search(by_file.err, a, std::regex("prompt: ([0-9]+) tokens \\(chat template applied\\)")));
  ASSERT_TRUE(std::regex_search(by_text.err, b, std::regex("prompt: ([0-9]+) tokens \\(chat template applied\\)")));
  EXPECT_EQ(a[1], b[1]);
  // llama.cpp's one built-in name in its Jinja mode: the same ChatML text.
  const Result by_name = run(base + " --chat-template chatml");
  const Result by_jinja = run(base + " --chat-template " + q(kChatml));
  ASSERT_EQ(by_name.code, 0) << by_name.err;
  EXPECT_EQ(by_name.out, by_jinja.out);
  ASSERT_TRUE(std::regex_search(by_name.err, a, std::regex("prompt: ([0-9]+) tokens \\(chat template applied\\)")));
  ASSERT_TRUE(std::regex_search(by_jinja.err, b, std::regex("prompt: ([0-9]+) tokens \\(chat template applied\\)")));
  EXPECT_EQ(a[1], b[1]);
  expect_error(base + " --chat-template llama3", 1, {"--chat-template llama3", "Jinja text"});
  expect_error(base + " --chat-template " + q(kChatml) + " --chat-template-file x.jinja", 1, {"one of them"});
  expect_error(base + " --system hi -sysf " + q((dir_ / "system.txt").string()), 1, {"one of them"});
  expect_error(base + " -sysf " + q((dir_ / "none.txt").string()), 1, {"none.txt"});
}

// A model without a chat template chats in ChatML, as llama.cpp's chat paths do, and says so;
// `run` answers it without a template (llama-cli's completion mode).
TEST_F(Cli, ChatWithoutATemplateUsesChatml) {
  MINFER_REQUIRE_SHARED();
  const auto s = dir_ / "s.json";
  Result r = run("chat " + stories() + " --temp 0 -n 4 --session " + q(s.string()), "Hi\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("no chat template: using ChatML"), std::string::npos) << r.err;
  const json j = json::parse(slurp(s));
  ASSERT_EQ(j["messages"].size(), 2u);
  EXPECT_TRUE(j["text"].get<std::string>().starts_with("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")) << j["text"];
  r = run(stories() + " Hi --temp 0 -n 4 --verbose");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("ChatML"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("chat template applied"), std::string::npos) << r.err;
}

// llama.cpp's other sampler flags: greedy through a reordered chain is still llama.cpp's greedy
// text; a seed gives the same text with mirostat, typical, XTC, top-n-sigma and dynamic
// temperature on; bad values and DRY are errors naming them.
TEST_F(Cli, LlamaCppSamplerFlags) {
  MINFER_REQUIRE_SHARED();
  const json g = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.greedy64.json")));
  const auto& c = g["cases"][0];
  const std::string base = stories() + " " + q(c["prompt_text"]) + " -n 64 --kv-type f32";
  Result r = run(base + " --temp 0 --samplers " + q("top_k;typical;temperature") + " --top-n-sigma 3");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, c["greedy"]["text"].get<std::string>());
  r = run(base + " --temp 0 --sampling-seq kmt");
  EXPECT_EQ(r.out, c["greedy"]["text"].get<std::string>());
  for (const char* flags : {" --mirostat 2 --mirostat-ent 4 --mirostat-lr 0.2", " --mirostat 1",
                            " --typical 0.9 --xtc-probability 0.5 --xtc-threshold 0.15 --top-n-sigma 1.5 "
                            "--dynatemp-range 0.4 --dynatemp-exp 2 --min-keep 2"}) {
    const Result a = run(base + " -s 11" + flags), b = run(base + " -s 11" + flags);
    ASSERT_EQ(a.code, 0) << flags << a.err;
    EXPECT_EQ(a.out, b.out) << flags;
    EXPECT_FALSE(a.out.empty());
  }
  expect_error(base + " --mirostat 3", 1, {"mirostat"});
  expect_error(base + " --typical 2", 1, {"typical-p"});
  expect_error(base + " --samplers " + q("top_k;bogus"), 1, {"bogus"});
  expect_error(base + " --sampling-seq kz", 1, {"'z'"});
  expect_error(base + " --dry-multiplier -1", 1, {"dry-multiplier"});
  expect_error(base + " --dry-penalty-last-n -2", 1, {"dry-penalty-last-n"});

  // DRY breaks the greedy text's loops: stories260K says "didn't know what to do" three times in
  // 200 tokens, with DRY once; a seed still decides the sampled text.
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string story = stories() + " " + q("Once upon a time") + " -n 200 --temp 0 --kv-type f32";
  const Result loop = run(story), dry = run(story + " --dry-multiplier 0.8 --dry-base 1.75 --dry-allowed-length 2");
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_EQ(count(loop.out, "didn't know what to do"), 3u) << loop.out;
  EXPECT_EQ(count(dry.out, "didn't know what to do"), 1u) << dry.out;
  const std::string sampled = stories() + " " + q("Once upon a time") +
                              " -n 100 --temp 0.8 -s 5 --dry-multiplier 0.8 --dry-sequence-breaker . --dry-penalty-last-n 64";
  const Result a = run(sampled), b = run(sampled);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

// llama.cpp's --override-kv and rope flags: the model reads the given values (no BOS: one prompt
// token fewer; a rope base given by flag or by key gives the same text, another than the file's);
// malformed or mistyped overrides are errors naming them.
TEST_F(Cli, MetadataOverridesAndRopeFlags) {
  MINFER_REQUIRE_SHARED();
  const std::string base = stories() + " " + q("Once upon a time") + " -n 16 --temp 0 --kv-type f32 --verbose";
  auto n_prompt = [](const Result& x) {
    std::smatch m;
    return std::regex_search(x.err, m, std::regex("prompt: ([0-9]+) tokens")) ? std::stoi(m[1]) : -1;
  };
  const Result plain = run(base);
  const Result no_bos = run(base + " --override-kv tokenizer.ggml.add_bos_token=bool:false");
  ASSERT_EQ(no_bos.code, 0) << no_bos.err;
  EXPECT_EQ(n_prompt(no_bos), n_prompt(plain) - 1);
  const Result by_flag = run(base + " --rope-freq-base 100");
  const Result by_key = run(base + " --override-kv llama.rope.freq_base=float:100,llama.context_length=int:4096");
  ASSERT_EQ(by_flag.code, 0) << by_flag.err;
  ASSERT_EQ(by_key.code, 0) << by_key.err;
  EXPECT_EQ(by_flag.out, by_key.out);
  EXPECT_NE(by_flag.out, plain.out);
  const Result scaled = run(base + " --rope-scale 2");
  const Result freq_scaled = run(base + " --rope-freq-scale 0.5 --rope-scaling linear");
  EXPECT_EQ(scaled.out, freq_scaled.out);
  EXPECT_NE(scaled.out, plain.out);
  expect_error(stories() + " x --override-kv llama.context_length=str:long", 1, {"llama.context_length", "type"});
  expect_error(stories() + " x --override-kv foo", 1, {"KEY=TYPE:VALUE"});
  expect_error(stories() + " x --rope-scale 2 --rope-freq-scale 0.5", 1, {"one of them"});
  expect_error(stories() + " x --yarn-beta-fast 4", 2, {"YaRN"});
}

// `minfer perplexity` prints llama-perplexity's lines: the running value per chunk, then the
// final estimate (its numbers are checked against llama.cpp in tests/runtime/test_perplexity).
TEST_F(Cli, PerplexityPrintsLlamaPerplexitysLines) {
  MINFER_REQUIRE_SHARED();
  std::string text;
  for (int i = 0; i < 12; ++i) text += "Once upon a time, there was a little girl named Lily. She loved to play in the park.\n";
  spit(dir_ / "text.txt", text);
  const Result r = run("perplexity " + stories() + " -f " + q((dir_ / "text.txt").string()) + " -c 64 -b 32 --kv-type f32 --verbose");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex("(\\[[0-9]+\\][0-9]+\\.[0-9]{4},)+\nFinal estimate: PPL = [0-9]+\\.[0-9]{4} \\+/- [0-9]+\\.[0-9]{5}\n")))
      << r.out;
  EXPECT_NE(r.err.find("chunks of 64"), std::string::npos) << r.err;
  spit(dir_ / "short.txt", "Once upon a time");
  expect_error("perplexity " + stories() + " -f " + q((dir_ / "short.txt").string()) + " -c 64", 1, {"needs at least 128"});
  expect_error("perplexity " + stories() + " -f " + q((dir_ / "none.txt").string()), 1, {"none.txt"});
  // --kl-divergence-base on the base model writes the file; --kl-divergence reads it back (the
  // same model: no divergence, the same top token everywhere).
  const std::string kld = (dir_ / "base.kld").string();
  Result b = run("perplexity " + stories() + " -f " + q((dir_ / "text.txt").string()) + " -c 64 --kl-divergence-base " + q(kld));
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.err.find("positions written to"), std::string::npos) << b.err;
  b = run("perplexity " + stories() + " --kl-divergence --kl-divergence-base " + q(kld));
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.out.find("====== KL divergence statistics ======"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("Same top p: 100.000"), std::string::npos) << b.out;
  expect_error("perplexity " + stories() + " --kl-divergence", 1, {"--kl-divergence-base"});
  expect_error("perplexity " + qwen2() + " --kl-divergence --kl-divergence-base " + q(kld), 1, {kld, "vocabulary"});
}

// llama.cpp's --reasoning-budget 0 and --chat-template-kwargs: Qwen3's template renders its
// empty think block (enable_thinking false) either way, four tokens more than by default.
TEST_F(Cli, ReasoningBudgetAndTemplateKwargs) {
  MINFER_REQUIRE_SHARED();
  const std::string base = q(minfer::test::shared_path("models/tiny-qwen3-q4_0.gguf")) + " Hi -n 1 --temp 0 --verbose";
  auto n_prompt = [](const Result& x) {
    std::smatch m;
    return std::regex_search(x.err, m, std::regex("prompt: ([0-9]+) tokens")) ? std::stoi(m[1]) : -1;
  };
  const Result plain = run(base), budget = run(base + " --reasoning-budget 0"),
               kwargs = run(base + " --chat-template-kwargs " + q(R"({"enable_thinking": false})"));
  ASSERT_EQ(budget.code, 0) << budget.err;
  ASSERT_EQ(kwargs.code, 0) << kwargs.err;
  EXPECT_EQ(n_prompt(budget), n_prompt(plain) + 4);  // <think>, \n\n, </think>, \n\n
  EXPECT_EQ(n_prompt(kwargs), n_prompt(budget));
  expect_error(base + " --reasoning-budget 100", 1, {"--reasoning-budget 100"});
  expect_error(base + " --chat-template-kwargs " + q("[1]"), 1, {"JSON object"});
}

TEST_F(Cli, ChatSessionRoundTrips) {
  MINFER_REQUIRE_SHARED();
  spit(dir_ / "chatml.jinja", kChatml);
  const std::string base = "chat " + qwen2() + " --chat-template-file " +
                           q((dir_ / "chatml.jinja").string()) + " --temp 0 -n 6 --session ";
  const auto a = dir_ / "a.json", b = dir_ / "b.json";
  ASSERT_EQ(run(base + q(a.string()), "Hi\nHow are you?\n").code, 0);
  ASSERT_EQ(run(base + q(b.string()), "Hi\n").code, 0);
  const Result r = run(base + q(b.string()), "How are you?\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("resumed 2 messages"), std::string::npos) << r.err;
  const json ja = json::parse(slurp(a)), jb = json::parse(slurp(b));
  ASSERT_EQ(ja["messages"].size(), 4u);
  EXPECT_EQ(ja["messages"], jb["messages"]);
  EXPECT_EQ(ja["tokens"], jb["tokens"]);
  EXPECT_EQ(ja["messages"][2]["content"], "How are you?");
}

TEST_F(Cli, ChatRegenClearAndOverflow) {
  MINFER_REQUIRE_SHARED();
  spit(dir_ / "chatml.jinja", kChatml);
  const std::string base = "chat " + qwen2() + " --chat-template-file " + q((dir_ / "chatml.jinja").string());
  // Greedy: /regen gives the same reply again, and replaces it in the conversation.
  const auto s = dir_ / "s.json";
  Result r = run(base + " --temp 0 -n 6 --session " + q(s.string()), "Hi\n/regen\n");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(slurp(s));
  ASSERT_EQ(j["messages"].size(), 2u);
  const std::string reply = j["messages"][1]["content"];
  EXPECT_EQ(r.out, reply + "\n" + reply + "\n");
  r = run(base + " --temp 0 -n 4 --session " + q(s.string()), "/clear\nHi\n");
  EXPECT_EQ(json::parse(slurp(s))["messages"].size(), 2u);
  // A small context: old turns are dropped with a notice, the chat goes on.
  std::string lines;
  for (int i = 0; i < 6; ++i) lines += "Tell me something about the number " + std::to_string(i) + " please\n";
  const auto o = dir_ / "o.json";
  r = run(base + " --temp 0 -n 8 -c 96 --session " + q(o.string()), lines);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("dropped the oldest"), std::string::npos) << r.err;
  const json jo = json::parse(slurp(o));
  ASSERT_GE(jo["messages"].size(), 2u);
  EXPECT_LT(jo["messages"].size(), 12u);
  EXPECT_EQ(jo["messages"][jo["messages"].size() - 2]["content"], "Tell me something about the number 5 please");
  EXPECT_NE(jo["messages"][0]["content"], "Tell me something about the number 0 please");
  EXPECT_LE(jo["tokens"].size(), 96u);
}

// --context-shift (llama.cpp's): a full context drops the older half of the text after --keep
// and the text goes on to -n; without it the text ends there. The shifted text starts as the
// unshifted one. In chat the reply goes on too, and the next turn still works.
TEST_F(Cli, ContextShiftGoesOnPastAFullContext) {
  MINFER_REQUIRE_SHARED();
  const std::string base = stories() + " " + q("Once upon a time") + " -c 48 -n 120 --temp 0 --ignore-eos --verbose";
  const Result cut = run(base);
  ASSERT_EQ(cut.code, 0) << cut.err;
  EXPECT_NE(cut.err.find("stopped: context full"), std::string::npos) << cut.err;
  for (const char* keep : {"", " --keep -1", " --keep 3"}) {
    const Result r = run(base + " --context-shift" + keep);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("(120 generated, stopped: token limit)"), std::string::npos) << keep << "\n" << r.err;
    EXPECT_TRUE(r.out.starts_with(cut.out)) << keep << "\n" << r.out << "\nvs\n" << cut.out;
    EXPECT_GT(r.out.size(), cut.out.size() + 100);
  }
  expect_error(base + " --context-shift --keep -2", 1, {"--keep -2"});

  spit(dir_ / "chatml.jinja", kChatml);
  const Result chat = run("chat " + qwen2() + " --chat-template-file " + q((dir_ / "chatml.jinja").string()) +
                              " --temp 0 -n 120 -c 64 --ignore-eos --context-shift --keep -1 --session " +
                              q((dir_ / "s.json").string()),
                          "Hi\nTell me more\n");
  ASSERT_EQ(chat.code, 0) << chat.err;
  EXPECT_NE(chat.err.find("[context full: shifted"), std::string::npos) << chat.err;
  // The first turn's long reply no longer fits the next turn's prompt: dropped, the chat goes on.
  EXPECT_NE(chat.err.find("dropped the oldest 2 messages"), std::string::npos) << chat.err;
  const json msgs = json::parse(slurp(dir_ / "s.json"))["messages"];
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0]["content"], "Tell me more");
}

// llama-cli's --prompt-cache: the first run saves the prompt's state, the next evaluates only
// what its prompt adds (the last token always) and gives the same text; -ro leaves the file as
// it is, -all saves the generated tokens too; a file that is not a state is an error.
TEST_F(Cli, PromptCacheReusesTheSavedPrompt) {
  MINFER_REQUIRE_SHARED();
  const json g = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.greedy64.json")));
  const auto& c = g["cases"][0];
  const std::string want = c["greedy"]["text"];
  const std::string cache = (dir_ / "prompt.cache").string();
  const std::string base = stories() + " " + q(c["prompt_text"]) + " -n 64 --temp 0 --kv-type f32 --verbose --prompt-cache " + q(cache);
  Result r = run(base);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  ASSERT_TRUE(fs::exists(cache));
  const std::string saved = slurp(cache);
  const size_t n_prompt = c["prompt_ids"].size();
  r = run(base);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_NE(r.err.find("prompt cache: " + std::to_string(n_prompt - 1) + " of the prompt's " + std::to_string(n_prompt) + " tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("prompt eval time") , std::string::npos);
  EXPECT_NE(r.err.find("/     1 tokens"), std::string::npos) << r.err;

  // Another prompt with the same start: only its own tokens are evaluated; -ro keeps the file.
  const std::string other = c["prompt_text"].get<std::string>() + " and the dog";
  const Result plain = run(stories() + " " + q(other) + " -n 16 --temp 0 --kv-type f32");
  r = run(stories() + " " + q(other) + " -n 16 --temp 0 --kv-type f32 --verbose --prompt-cache-ro --prompt-cache " + q(cache));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_NE(r.err.find("prompt cache: " + std::to_string(n_prompt) + " of the prompt's"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(cache), saved);
  r = run(base + " --prompt-cache-all");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GT(slurp(cache).size(), saved.size());

  spit(cache, "not a state");
  expect_error(stories() + " x -n 4 --prompt-cache " + q(cache), 1, {cache, "not a minfer state file"});
  expect_error(stories() + " x --prompt-cache-ro", 1, {"need --prompt-cache FILE"});
}

TEST_F(Cli, DemoRunsAndCachesItsModel) {
  const std::string cache = q((dir_ / "cache").string());
  Result r = run("demo --cache-dir " + cache + " -n 8");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("RANDOM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("writing the demo model"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("generated 8 tokens"), std::string::npos) << r.out;
  r = run("demo --cache-dir " + cache + " -n 4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("using the cached demo model"), std::string::npos) << r.out;
}

TEST_F(Cli, GenModelCommand) {
  const auto out = dir_ / "m.gguf";
  Result r = run("gen-model --preset tiny-qwen3 --type q4_0 -q -o " + q(out.string()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
  r = run("gen-model --list");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("qwen2.5-0.5b"), std::string::npos);
  // The generated model runs.
  r = run(q(out.string()) + " hello -n 4 --temp 0 --no-template");
  EXPECT_EQ(r.code, 0) << r.err;
  expect_error("gen-model --preset nope -o " + q((dir_ / "x.gguf").string()), 1, {"unknown preset", "nope"});
  expect_error("gen-model --preset tiny-llama --type q9_9 -o " + q((dir_ / "x.gguf").string()), 1, {"q9_9"});
}

// A GBNF string literal of `text`.
std::string gbnf_literal(const std::string& text) {
  std::string lit = "\"";
  for (char c : text) lit += c == '"' ? std::string("\\\"") : c == '\\' ? std::string("\\\\") : c == '\n' ? std::string("\\n") : std::string(1, c);
  return lit + "\"";
}

// --grammar as llama.cpp's: a grammar that allows llama.cpp's greedy text leaves every greedy
// choice as it was (and ends the text there); one that forbids a leading comma makes llama.cpp's
// second choice come first; one that asks for lowercase words and a full stop gets text of that
// shape (checked with std::regex) and then end of generation, the only thing the grammar leaves;
// two grammars give the text llama.cpp's grammar sampler gave.
TEST_F(Cli, GrammarConstrainsTheGeneratedText) {
  MINFER_REQUIRE_SHARED();
  const json g = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.greedy64.json")));
  const json& c = g["cases"][0];
  const std::string golden = c["greedy"]["text"];
  Result r = run(stories() + " " + q(c["prompt_text"]) + " -n 80 --temp 0 --kv-type f32 --grammar " +
                 q("root ::= " + gbnf_literal(golden)));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, golden);
  EXPECT_NE(r.err.find("stopped: end of generation"), std::string::npos) << r.err;

  const json o = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.once-upon-a-time.json")));
  const json& top = o["positions"][o["prompt_ids"].size() - 1]["top"];
  r = run(stories() + " " + q(o["prompt_text"]) + " -n 1 --temp 0 --kv-type f32 --grammar " + q("root ::= [^,] .*"));
  ASSERT_EQ(r.code, 0) << r.err;
  const Result t = run("tokenize -m " + stories() + " -p " + q(o["prompt_text"].get<std::string>() + " " + r.out) + " --ids");
  ASSERT_EQ(t.code, 0) << t.err;
  const json ids = json::parse(t.out);
  ASSERT_EQ(ids.size(), o["prompt_ids"].size() + 1) << r.out;
  EXPECT_EQ(ids.back(), top[1]["id"]) << r.out;

  spit(dir_ / "words.gbnf", "# lowercase words, then a full stop\nroot ::= (\" \" word){3,12} \".\"\nword ::= [a-z]+\n");
  for (const char* prompt : {"Once upon a time", "The cat"}) {
    r = run(stories() + " " + q(prompt) + " -n 100 --temp 0 --grammar-file " + q((dir_ / "words.gbnf").string()));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(std::regex_match(r.out, std::regex("[a-z]+( [a-z]+){2,11}\\."))) << r.out;
    EXPECT_NE(r.err.find("stopped: end of generation"), std::string::npos) << r.err;
  }
  // llama.cpp's own grammar sampler on the same ids (v0.4.0 through the oracle's node-llama-cpp:
  // LlamaGrammarEvaluationState, sequence.evaluate([1, 403, 407, 261, 378], temperature 0), 40
  // tokens, F16 KV cache), recorded here: the same text.
  const std::pair<const char*, const char*> recorded[] = {
      {"root ::= \"{\" [a-z ]+ \"}\"",
       "{cle was a little girl named outside in the park with her mommy and daddy went to the park with her mommy"},
      {"root ::= \"{\" [a-z]+ \" \" [a-z]+", "{cle washingsidelysideeeeysideeelersideeelersideeelinging"},
  };
  for (const auto& [grammar, text] : recorded) {
    r = run(stories() + " " + q("Once upon a time") + " -n 40 --temp 0 --grammar " + q(grammar));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, text) << grammar;
  }
  // End of generation (token 2, pushed up here) only where the grammar's text is complete.
  r = run(stories() + " " + q("Once upon a time") + " -n 100 --temp 0 -l 2+1000 --grammar " + q("root ::= (\" \" [a-z]+){5}"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex("[a-z]+( [a-z]+){4}"))) << r.out;
  EXPECT_NE(r.err.find("stopped: end of generation"), std::string::npos) << r.err;
}

// --json-schema as llama.cpp's -j: the text is JSON of the schema's shape, and the same text as
// llama.cpp's grammar sampler gives with the grammar its json_schema_to_grammar writes for the
// schema (v0.4.0 through the oracle's node-llama-cpp, as above, ids [1, 403, 407, 261, 378]).
TEST_F(Cli, JsonSchemaConstrainsTheGeneratedText) {
  MINFER_REQUIRE_SHARED();
  const std::string person =
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer",
          "minimum": 1, "maximum": 120}, "mood": {"enum": ["happy", "sad"]}}, "required": ["name", "age", "mood"]})";
  Result r = run(stories() + " " + q("Once upon a time") + " -n 80 --temp 0 -j " + q(person));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, R"({ "name" : "I can help m", "age" : 30, "mood" : "sad" })");
  EXPECT_NE(r.err.find("stopped: end of generation"), std::string::npos) << r.err;
  const json p = json::parse(r.out);
  EXPECT_LE(p["name"].get<std::string>().size(), 12u);
  EXPECT_TRUE(p["age"].get<int>() >= 1 && p["age"].get<int>() <= 120);

  spit(dir_ / "items.json", R"({"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer",
      "exclusiveMinimum": 0}, "ok": {"type": "boolean"}, "when": {"type": "string", "format": "date"},
      "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"}}, "required": ["id", "when"]}, "minItems": 1, "maxItems": 2})");
  r = run(stories() + " " + q("Once upon a time") + " -n 120 --temp 0 --json-schema-file " + q((dir_ / "items.json").string()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, R"([ { "id" : 3000000000000000, "when" : "1000-05-05" }, { "id" : 2000000000000000, "when" : "1000-05-05" } ])");
  const json items = json::parse(r.out);
  ASSERT_TRUE(items.is_array() && items.size() >= 1 && items.size() <= 2) << r.out;
  for (const json& it : items) {
    EXPECT_GT(it["id"].get<int64_t>(), 0);
    EXPECT_TRUE(std::regex_match(it["when"].get<std::string>(), std::regex("[0-9]{4}-(0[1-9]|1[0-2])-[0-3][0-9]")));
  }

  // What the grammar cannot hold is said on stderr; the shape still holds (a prefix of an array
  // of integers: -n ends it).
  r = run(stories() + " " + q("Once upon a time") + " -n 40 --temp 0 -j " + q(R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: JSON schema: 'uniqueItems' is not enforced"), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex(R"(\[\s*(-?[0-9]+(\s*,\s*-?[0-9]+)*)?(\s*,)?\s*\]?)"))) << r.out;
}

TEST_F(Cli, BadInputIsOneLineAndTheRightExitCode) {
  MINFER_REQUIRE_SHARED();
  // Files.
  expect_error(q((dir_ / "missing.gguf").string()) + " hi", 1, {"missing.gguf", "no such file"});
  spit(dir_ / "text.gguf", "this is not a GGUF file at all, just some text\n");
  expect_error(q((dir_ / "text.gguf").string()) + " hi", 1, {"text.gguf"});
  expect_error("run -m " + q(minfer::test::shared_path("vocab/ggml-vocab-phi-3.gguf")) + " -p hi", 1,
               {"phi3"});
  expect_error(stories() + " -f " + q((dir_ / "nope.txt").string()), 1, {"nope.txt"});
  // Prompt longer than the context.
  std::string long_prompt;
  for (int i = 0; i < 40; ++i) long_prompt += "the cat sat on the mat ";
  expect_error(stories() + " " + q(long_prompt) + " -c 32", 1, {"prompt is", "32"});
  // Negative or absurd values.
  expect_error(stories() + " hi -n -5", 1, {"-n"});
  expect_error(stories() + " hi -t -2", 1, {"-t"});
  expect_error(stories() + " hi -c -1", 1, {"-c"});
  expect_error(stories() + " hi -c 999999999", 1, {"-c"});
  expect_error(stories() + " hi --temp -1", 1, {"temperature"});
  expect_error(stories() + " hi --top-p 1.5", 1, {"top-p"});
  expect_error(stories() + " hi --repeat-penalty 0", 1, {"repeat-penalty"});
  expect_error(stories() + " hi --kv-type q4_k", 1, {"--kv-type"});
  // Usage errors: exit 2.
  expect_error(stories() + " hi --frobnicate", 2, {"frobnicate"});
  expect_error(stories() + " hi -n many", 2, {"many"});
  expect_error("frobnicate", 2, {"unknown command"});
  expect_error("run -p hi", 2, {"no model"});
  expect_error("chat", 2, {"no model"});
  expect_error("chat " + stories() + " --chat-template-file none.jinja", 1, {"none.jinja", "chat template"});
  expect_error(stories() + " hi -l 12x", 1, {"--logit-bias", "TOKEN_ID"});
  expect_error(stories() + " hi -l 5+up", 1, {"--logit-bias", "not a number"});
  expect_error(stories() + " hi -l 600+1", 1, {"logit bias", "600", "512"});
  expect_error(stories() + " hi --grammar " + q("root ::= word"), 1, {"grammar", "undefined rule 'word'", "line 1"});
  expect_error(stories() + " hi --grammar " + q("root ::= [a-z]+") + " --grammar-file x.gbnf", 1, {"--grammar", "one of them"});
  expect_error(stories() + " hi --grammar-file " + q((dir_ / "none.gbnf").string()), 1, {"none.gbnf"});
  expect_error(stories() + " hi -j " + q(R"({"type": "text"})"), 1, {"JSON schema", "unknown type 'text'"});
  expect_error(stories() + " hi -j " + q("{\"type\": ") , 1, {"JSON schema", "not JSON"});
  expect_error(stories() + " hi -j {} --grammar " + q("root ::= [a-z]+"), 1, {"--json-schema", "one of them"});
  expect_error(stories() + " hi --json-schema-file " + q((dir_ / "none.json").string()), 1, {"none.json"});
  expect_error("serve " + stories() + " --grammar " + q("root ::= root"), 1, {"left-recursive"});
  expect_error("serve", 2, {"no model"});
  expect_error("serve " + q((dir_ / "missing.gguf").string()), 1, {"missing.gguf", "no such file"});
  expect_error("serve " + stories() + " --port 70000", 2, {"--port"});
  expect_error("serve " + stories() + " --temp -1", 1, {"temperature"});
  // Speculative decoding's flags.
  const std::string tiny_random = q(minfer::test::shared_path("models/llama-2-tiny-random.gguf"));
  expect_error(stories() + " hi -md " + tiny_random, 1, {"llama-2-tiny-random.gguf", "cannot draft", "32000"});
  expect_error(stories() + " hi -md " + q((dir_ / "missing.gguf").string()), 1, {"missing.gguf", "no such file"});
  expect_error(stories() + " hi -md " + stories() + " --draft-p-min 2", 1, {"--draft-p-min"});
  expect_error(stories() + " hi -md " + stories() + " --draft-max 2 --draft-min 3", 1, {"--draft-min"});
  expect_error(stories() + " hi -md " + stories() + " -cd -4", 1, {"-cd"});
  expect_error("serve " + stories() + " --embeddings -md " + stories(), 1, {"--model-draft", "--embeddings"});
}

// -md (llama.cpp's speculative decoding): the text is llama.cpp's greedy text all the same, with
// a line on stderr for the guesses; llama.cpp's spellings of the flags are taken.
TEST_F(Cli, DraftModelLeavesTheTextAsItIs) {
  MINFER_REQUIRE_SHARED();
  const json g = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.greedy64.json")));
  const auto& c = g["cases"][0];
  for (const std::string& flags : {" -md " + stories(), " --model-draft " + stories() + " --draft 3 --draft-p-min 0 -cd 128"}) {
    const Result r = run(stories() + " " + q(c["prompt_text"]) + " -n 64 --temp 0 --kv-type f32" + flags);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, c["greedy"]["text"].get<std::string>()) << flags;
    EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(draft = +[1-9][0-9]* tokens drafted, [1-9][0-9]* accepted)"))) << r.err;
  }
}

// `minfer serve` as a user starts it: the address on stdout, the flags as the defaults of a
// request (here --temp 0 and -n 64: llama.cpp's greedy text), one line per request on stderr,
// and SIGTERM ends it with exit code 0.
TEST_F(Cli, ServeAnswersTheOpenAiApiAndStopsOnSigterm) {
  MINFER_REQUIRE_SHARED();
  const fs::path out = dir_ / "serve.out", err = dir_ / "serve.err", pidf = dir_ / "pid",
                 code = dir_ / "code";
  const std::string cmd = "(" + std::string(MINFER_BINARY) + " serve " + stories() +
                          " --port 0 --temp 0 -n 64 --kv-type f32 -c 256 -t 1 >" + q(out.string()) +
                          " 2>" + q(err.string()) + " & echo $! >" + q(pidf.string()) +
                          "; wait $!; echo $? >" + q(code.string()) + ") &";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::smatch m;
  std::string url_line;
  const std::regex url_re("http://127\\.0\\.0\\.1:([0-9]+)/v1");
  for (int i = 0; i < 200 && !std::regex_search(url_line, m, url_re); ++i) {
    usleep(50000);
    url_line = slurp(out);
  }
  ASSERT_TRUE(std::regex_search(url_line, m, url_re)) << "stdout: " << url_line << "\nstderr: " << slurp(err);
  const std::string port = m[1];
  const json g = json::parse(slurp(minfer::test::shared_path("golden/models/stories260K.greedy64.json")));
  const std::string body = json{{"prompt", g["cases"][0]["prompt_text"]}, {"ignore_eos", true}}.dump();
  spit(dir_ / "body.json", body);
  // curl is not a dependency: a bash /dev/tcp request does the HTTP.
  const std::string req = "exec 3<>/dev/tcp/127.0.0.1/" + port +
                          "; printf 'POST /v1/completions HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n"
                          "Content-Type: application/json\\r\\nContent-Length: " +
                          std::to_string(body.size()) + "\\r\\nConnection: close\\r\\n\\r\\n' >&3; cat " +
                          q((dir_ / "body.json").string()) + " >&3; cat <&3 >" + q((dir_ / "resp").string());
  ASSERT_EQ(std::system(("bash -c " + q(req)).c_str()), 0);
  const std::string resp = slurp(dir_ / "resp");
  ASSERT_NE(resp.find("HTTP/1.1 200"), std::string::npos) << resp;
  const json j = json::parse(resp.substr(resp.find("\r\n\r\n") + 4));
  EXPECT_EQ(j["choices"][0]["text"], g["cases"][0]["greedy"]["text"]);
  EXPECT_EQ(j["usage"]["completion_tokens"], 64);

  const pid_t pid = std::stoi(slurp(pidf));
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  for (int i = 0; i < 200 && slurp(code).empty(); ++i) usleep(50000);
  EXPECT_EQ(slurp(code), "0\n");
  const std::string log = slurp(err);
  EXPECT_NE(log.find("completion: prompt 5 tokens (0 cached"), std::string::npos) << log;
  EXPECT_NE(log.find("64 generated"), std::string::npos) << log;
}

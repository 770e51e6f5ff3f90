// `minfer serve`'s server through real HTTP: greedy completions reproduce llama.cpp's golden
// text for stories260K (whole, streamed, and from token ids), a chat request renders the Qwen3
// template into the golden chat-hi prompt, the KV cache carries over between requests without
// changing the result, and bad requests get OpenAI's error bodies with 4xx.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <tuple>
#include <vector>
#include <httplib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>

#include "common/test_data.h"
#include "runtime/embed.h"
#include "runtime/model.h"
#include "runtime/speculative.h"
#include "server/openai_server.h"
#include "tokenizer/tokenizer.h"
#include "tools/gen_model.h"

using namespace minfer;
using json = nlohmann::ordered_json;

namespace {

struct Running {
  std::unique_ptr<runtime::Model> model;
  std::unique_ptr<server::OpenAiServer> srv;
  std::thread th;
  int port = 0;
  ~Running() {
    if (srv) srv->stop();
    if (th.joinable()) th.join();
  }
};

// KV cache F32, as the golden files were made. `model`: a file of ../shared/models, or a path.
std::unique_ptr<Running> start(const std::string& model, server::ServeOptions o = {}) {
  auto r = std::make_unique<Running>();
  r->model = runtime::Model::load(model.find('/') == std::string::npos ? test::shared_path("models/" + model) : model);
  o.port = 0;
  o.model_name = model;
  if (o.ctx.n_ctx == 0) o.ctx.n_ctx = 256;
  o.ctx.n_threads = 1;
  o.ctx.kv_type = GgmlType::F32;
  if (!o.chat_template) o.chat_template = r->model->tokenizer().chat_template();
  r->srv = std::make_unique<server::OpenAiServer>(*r->model, o);
  r->port = r->srv->bind();
  r->th = std::thread([s = r->srv.get()] { s->listen(); });
  return r;
}

json read_json(const std::string& rel) {
  std::ifstream in(test::shared_path(rel));
  return json::parse(in);
}

json post(httplib::Client& cli, const char* path, const json& body, int want_status = 200) {
  auto res = cli.Post(path, body.dump(), "application/json");
  EXPECT_TRUE(res);
  if (!res) return json();
  EXPECT_EQ(res->status, want_status) << res->body;
  return json::parse(res->body);
}

// The server's text as llama_detokenize (the golden text) writes it: that drops the first
// piece's leading space for an SPM vocabulary, while the server streams pieces as llama-server
// does, so its text keeps it.
std::string as_detokenized(std::string text, const std::string& golden) {
  if (text.starts_with(' ') && !golden.starts_with(' ')) text.erase(0, 1);
  return text;
}

// The "data: " payloads of an SSE body, [DONE] included as a string.
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

}  // namespace

TEST(OpenAiServer, GreedyCompletionsReproduceLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  auto r = start("stories260K.gguf");
  httplib::Client cli("127.0.0.1", r->port);
  const json golden = read_json("golden/models/stories260K.greedy64.json");
  for (const json& c : golden["cases"]) {
    const std::string prompt = c["prompt_text"];
    const std::string want = c["greedy"]["text"];
    const json body = {{"prompt", prompt}, {"max_tokens", 64}, {"temperature", 0}, {"ignore_eos", true}};
    json res = post(cli, "/v1/completions", body);
    EXPECT_EQ(as_detokenized(res["choices"][0]["text"], want), want) << prompt;
    EXPECT_EQ(res["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(res["usage"]["prompt_tokens"], c["prompt_ids"].size());
    EXPECT_EQ(res["usage"]["completion_tokens"], 64);

    // The same prompt as token ids, and streamed: the same text.
    json by_ids = body;
    by_ids["prompt"] = c["prompt_ids"];
    res = post(cli, "/v1/completions", by_ids);
    EXPECT_EQ(as_detokenized(res["choices"][0]["text"], want), want) << prompt;

    json streamed = body;
    streamed["stream"] = true;
    auto sres = cli.Post("/v1/completions", streamed.dump(), "application/json");
    ASSERT_TRUE(sres);
    ASSERT_EQ(sres->status, 200);
    EXPECT_EQ(sres->get_header_value("Content-Type"), "text/event-stream");
    const auto events = sse_payloads(sres->body);
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events.back(), "[DONE]");
    std::string text;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      const json e = json::parse(events[i]);
      EXPECT_EQ(e["object"], "text_completion");
      text += e["choices"][0]["text"].get<std::string>();
      const bool last = i + 2 == events.size();
      EXPECT_EQ(e["choices"][0]["finish_reason"].is_null(), !last);
    }
    EXPECT_EQ(as_detokenized(text, want), want) << prompt;
  }

  // Penalties see the whole prompt, the cached part included: a penalized reply is the same
  // whether the prompt was prefilled anew or (the second time) taken from the cache.
  const json penalized = {{"prompt", "Once upon a time, there was a little girl named Lily. She"},
                          {"max_tokens", 24}, {"temperature", 0}, {"repeat_penalty", 1.5},
                          {"repeat_last_n", -1}};
  const json p1 = post(cli, "/v1/completions", penalized);
  const json p2 = post(cli, "/v1/completions", penalized);
  EXPECT_LT(p1["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  EXPECT_EQ(p2["usage"]["prompt_tokens_details"]["cached_tokens"], p2["usage"]["prompt_tokens"].get<int>() - 1);
  EXPECT_EQ(p1["choices"][0]["text"], p2["choices"][0]["text"]);
  // ... and the penalty is applied: the greedy text without it differs.
  json plain = penalized;
  plain.erase("repeat_penalty");
  EXPECT_NE(post(cli, "/v1/completions", plain)["choices"][0]["text"], p1["choices"][0]["text"]);

  // Requests that arrive together are served one after the other, each as if alone.
  std::vector<std::string> texts(golden["cases"].size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < texts.size(); ++i)
    clients.emplace_back([&, i] {
      httplib::Client own("127.0.0.1", r->port);
      const json body = {{"prompt", golden["cases"][i]["prompt_text"]}, {"max_tokens", 64},
                         {"temperature", 0}, {"ignore_eos", true}};
      if (auto res = own.Post("/v1/completions", body.dump(), "application/json"); res && res->status == 200)
        texts[i] = json::parse(res->body)["choices"][0]["text"];
    });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string want = golden["cases"][i]["greedy"]["text"];
    EXPECT_EQ(as_detokenized(texts[i], want), want) << "concurrent request " << i;
  }
}

// Log-probabilities against llama.cpp's own: at every generated position of stories260K's golden
// continuation, the sampled token and the golden top-10 with their log-probabilities (F32 file,
// F32 KV cache: within 1e-3, golden/models/README.md's F32 tolerance); streamed, the chunks
// carry the same entries.
// llama-server's own /completion: the golden greedy text again, in its response shape, whole
// and streamed; a stop string is its stopping_word.
// With a draft model (-md) the replies are llama.cpp's greedy text all the same, whole and
// streamed, also when the cache is reused; the timings say what the draft guessed, as
// llama-server's do.
TEST(OpenAiServer, DraftModelLeavesTheRepliesAsTheyAre) {
  MINFER_REQUIRE_SHARED();
  const auto draft_model = runtime::Model::load(test::shared_path("models/stories260K.gguf"));
  runtime::ContextParams dcp;
  dcp.n_ctx = 256;
  dcp.n_threads = 1;
  dcp.kv_type = GgmlType::F32;
  runtime::Context dctx(*draft_model, dcp);
  runtime::DraftParams dp;
  dp.n_max = 5;
  dp.p_min = 0.3f;
  runtime::Drafter drafter(dctx, dp);
  server::ServeOptions o;
  o.drafter = &drafter;
  auto r = start("stories260K.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  const json golden = read_json("golden/models/stories260K.greedy64.json");
  for (int round = 0; round < 2; ++round) {
    for (const json& c : golden["cases"]) {
      const std::string want = c["greedy"]["text"];
      json body = {{"prompt", c["prompt_text"]}, {"max_tokens", 64}, {"temperature", 0}, {"ignore_eos", true}};
      const json res = post(cli, "/v1/completions", body);
      EXPECT_EQ(as_detokenized(res["choices"][0]["text"], want), want);
      EXPECT_EQ(res["usage"]["completion_tokens"], 64);
      const json& t = res["timings"];
      EXPECT_GT(t.value("draft_n", 0), 0) << t.dump();
      EXPECT_GT(t.value("draft_n_accepted", 0), 0) << t.dump();
      EXPECT_LE(t.value("draft_n_accepted", 0), t.value("draft_n", 0));
      body["stream"] = true;
      auto sres = cli.Post("/v1/completions", body.dump(), "application/json");
      ASSERT_TRUE(sres);
      std::string text;
      for (const std::string& p : sse_payloads(sres->body))
        if (p != "[DONE]") text += json::parse(p)["choices"][0]["text"].get<std::string>();
      EXPECT_EQ(as_detokenized(text, want), want);
    }
  }
  // A request's own settings, llama-server's speculative.* fields: none drafted with n_max 0;
  // two at a time, any confidence, the same text; a p_min outside [0, 1] is refused.
  const json& c = golden["cases"][1];
  const std::string want = c["greedy"]["text"];
  json body = {{"prompt", c["prompt_text"]}, {"max_tokens", 64}, {"temperature", 0}, {"ignore_eos", true},
               {"speculative.n_max", 0}};
  json res = post(cli, "/v1/completions", body);
  EXPECT_EQ(as_detokenized(res["choices"][0]["text"], want), want);
  EXPECT_FALSE(res["timings"].contains("draft_n")) << res["timings"].dump();
  body["speculative.n_max"] = 2;
  body["speculative.p_min"] = 0;
  res = post(cli, "/v1/completions", body);
  EXPECT_EQ(as_detokenized(res["choices"][0]["text"], want), want);
  EXPECT_GE(res["timings"].value("draft_n", 0), 40) << res["timings"].dump();  // two a step, every step
  res = post(cli, "/completion", body);
  EXPECT_EQ(res["generation_settings"]["speculative.n_max"], 2);
  EXPECT_EQ(res["generation_settings"]["speculative.n_min"], 0);
  body["speculative.p_min"] = 1.5;
  post(cli, "/v1/completions", body, 400);

  // Without a draft model the timings have no draft fields.
  auto plain = start("stories260K.gguf");
  httplib::Client pcli("127.0.0.1", plain->port);
  res = post(pcli, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}});
  EXPECT_FALSE(res["timings"].contains("draft_n")) << res["timings"].dump();
}

// GET /metrics with --metrics: llama-server's Prometheus text, counting what the requests did;
// the throughput gauges cover the time since the previous scrape. Without the flag: 501.
TEST(OpenAiServer, Metrics) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.metrics = true;
  auto r = start("stories260K.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  auto scrape = [&] {
    auto res = cli.Get("/metrics");
    EXPECT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4");
    std::map<std::string, double> m;
    std::istringstream in(res->body);
    std::string line;
    while (std::getline(in, line)) {
      if (line.starts_with("#")) continue;
      const size_t sp = line.find(' ');
      EXPECT_TRUE(line.starts_with("llamacpp:") && sp != std::string::npos) << line;
      m[line.substr(9, sp - 9)] = std::stod(line.substr(sp + 1));
    }
    return m;
  };
  auto m = scrape();
  EXPECT_EQ(m.size(), 12u);
  EXPECT_EQ(m["prompt_tokens_total"], 0);
  EXPECT_EQ(m["requests_processing"], 0);

  int64_t prompt = 0, predicted = 0, last_prompt = 0;
  for (const char* text : {"Once upon a time", "Once upon a time, a cat"}) {
    const json res = post(cli, "/v1/completions", {{"prompt", text}, {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}});
    prompt += res["timings"]["prompt_n"].get<int64_t>();
    predicted += res["usage"]["completion_tokens"].get<int64_t>();
    last_prompt = res["usage"]["prompt_tokens"].get<int64_t>();
  }
  m = scrape();
  EXPECT_EQ(m["prompt_tokens_total"], double(prompt));
  EXPECT_EQ(m["tokens_predicted_total"], double(predicted));
  EXPECT_GT(m["prompt_seconds_total"], 0);
  EXPECT_GT(m["tokens_predicted_seconds_total"], 0);
  EXPECT_GT(m["prompt_tokens_seconds"], 0);
  EXPECT_GT(m["predicted_tokens_seconds"], 0);
  // One call per prompt and one per generated token but the last of each request.
  EXPECT_EQ(m["n_decode_total"], 2.0 + 2 * 9);
  // The cache: the second prompt and its reply but the last token.
  EXPECT_EQ(m["kv_cache_tokens"], double(last_prompt + 9));
  EXPECT_DOUBLE_EQ(m["kv_cache_usage_ratio"], m["kv_cache_tokens"] / 256);
  EXPECT_EQ(m["requests_deferred"], 0);
  // The next scrape: totals stay, the gauges start again.
  const auto again = scrape();
  EXPECT_EQ(again.at("prompt_tokens_total"), m["prompt_tokens_total"]);
  EXPECT_EQ(again.at("prompt_tokens_seconds"), 0);
  EXPECT_EQ(again.at("predicted_tokens_seconds"), 0);

  auto plain = start("stories260K.gguf");
  httplib::Client pcli("127.0.0.1", plain->port);
  auto res = pcli.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 501);
  EXPECT_NE(res->body.find("--metrics"), std::string::npos) << res->body;
}

// GET /slots, llama-server's: the one slot, idle before any request, then the last task's
// prompt, settings and count of generated tokens; --no-slots: 501.
TEST(OpenAiServer, Slots) {
  MINFER_REQUIRE_SHARED();
  auto r = start("stories260K.gguf");
  httplib::Client cli("127.0.0.1", r->port);
  auto slots = [&] {
    auto res = cli.Get("/slots");
    EXPECT_TRUE(res && res->status == 200);
    return res ? json::parse(res->body) : json();
  };
  json s = slots();
  ASSERT_TRUE(s.is_array() && s.size() == 1) << s.dump();
  EXPECT_EQ(s[0]["id"], 0);
  EXPECT_EQ(s[0]["id_task"], -1);
  EXPECT_EQ(s[0]["n_ctx"], 256);
  EXPECT_EQ(s[0]["is_processing"], false);
  EXPECT_EQ(s[0]["speculative"], false);
  EXPECT_EQ(s[0]["next_token"]["n_decoded"], 0);
  for (int i = 0; i < 2; ++i)
    post(cli, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 5}, {"temperature", 0}, {"ignore_eos", true}});
  s = slots();
  EXPECT_EQ(s[0]["id_task"], 1);
  EXPECT_EQ(s[0]["is_processing"], false);
  EXPECT_NE(s[0]["prompt"].get<std::string>().find("Once upon a time"), std::string::npos) << s.dump();
  EXPECT_EQ(s[0]["params"]["n_predict"], 5);
  EXPECT_EQ(s[0]["next_token"]["n_decoded"], 5);
  EXPECT_EQ(s[0]["next_token"]["n_remain"], 0);
  server::ServeOptions o;
  o.slots = false;
  auto off = start("stories260K.gguf", o);
  httplib::Client cli2("127.0.0.1", off->port);
  auto res = cli2.Get("/slots");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 501);
}

TEST(OpenAiServer, LlamaServersOwnCompletionEndpoint) {
  MINFER_REQUIRE_SHARED();
  auto r = start("stories260K.gguf");
  httplib::Client cli("127.0.0.1", r->port);
  const json golden = read_json("golden/models/stories260K.greedy64.json");
  const json& c = golden["cases"][0];
  const std::string want = c["greedy"]["text"];
  json body = {{"prompt", c["prompt_text"]}, {"n_predict", 64}, {"temperature", 0}, {"ignore_eos", true}, {"return_tokens", true}};
  json res = post(cli, "/completion", body);
  EXPECT_EQ(as_detokenized(res["content"], want), want);
  EXPECT_EQ(res["stop"], true);
  EXPECT_EQ(res["stop_type"], "limit");
  EXPECT_EQ(res["tokens_predicted"], 64);
  EXPECT_EQ(res["tokens_evaluated"], c["prompt_ids"].size());
  EXPECT_EQ(res["tokens"], c["greedy"]["ids"]);
  EXPECT_EQ(res["generation_settings"]["n_predict"], 64);
  // The prompt as it was run: BOS added, as llama-server shows it.
  EXPECT_EQ(res["prompt"], "<s> " + c["prompt_text"].get<std::string>());

  body["stream"] = true;
  auto sres = cli.Post("/completion", body.dump(), "application/json");
  ASSERT_TRUE(sres);
  const auto events = sse_payloads(sres->body);
  ASSERT_GE(events.size(), 2u);
  std::string text;
  json ids = json::array();
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json e = json::parse(events[i]);
    EXPECT_EQ(e["stop"], false);
    text += e["content"].get<std::string>();
    for (const json& t : e["tokens"]) ids.push_back(t);
  }
  EXPECT_EQ(as_detokenized(text, want), want);
  EXPECT_EQ(ids, c["greedy"]["ids"]);
  const json last = json::parse(events.back());  // no [DONE] on llama-server's own stream
  EXPECT_EQ(last["stop"], true);
  EXPECT_EQ(last["tokens_predicted"], 64);

  // A stop string: the text ends before it, and the response names it.
  const std::string stop = want.substr(want.find(' ', 10), 5);
  body = {{"prompt", c["prompt_text"]}, {"n_predict", 64}, {"temperature", 0}, {"stop", {stop}}};
  res = post(cli, "/completion", body);
  EXPECT_EQ(res["stop_type"], "word");
  EXPECT_EQ(res["stopping_word"], stop);
  EXPECT_EQ(as_detokenized(res["content"], want), want.substr(0, want.find(stop)));
  // No FIM tokens in this vocabulary: /infill says so.
  EXPECT_NE(post(cli, "/infill", {{"input_prefix", "a"}}, 400)["error"]["message"].get<std::string>().find("fill-in-the-middle"),
            std::string::npos);
}

// --context-shift: a reply longer than the context goes on to n_predict ("truncated", as
// llama-server reports a shift); the request's n_keep/n_discard show in its settings, and the
// next request reuses what the shifted cache still shares with its prompt. Without the flag the
// reply ends with the context ("length").
TEST(OpenAiServer, ContextShift) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.ctx.n_ctx = 48;
  auto plain = start("stories260K.gguf", o);
  httplib::Client pc("127.0.0.1", plain->port);
  const json body = {{"prompt", "Once upon a time"}, {"n_predict", 100}, {"temperature", 0}, {"ignore_eos", true},
                     {"n_keep", 2}, {"n_discard", 10}};
  json res = post(pc, "/completion", body);
  EXPECT_EQ(res["stop_type"], "limit");
  EXPECT_EQ(res["truncated"], true);
  EXPECT_LT(res["tokens_predicted"].get<int>(), 48);
  const std::string cut = res["content"];

  o.context_shift = true;
  auto r = start("stories260K.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  res = post(cli, "/completion", body);
  EXPECT_EQ(res["tokens_predicted"], 100);
  EXPECT_EQ(res["truncated"], true);
  EXPECT_EQ(res["generation_settings"]["n_keep"], 2);
  EXPECT_EQ(res["generation_settings"]["n_discard"], 10);
  EXPECT_TRUE(res["content"].get<std::string>().starts_with(cut)) << res["content"] << "\nvs\n" << cut;
  // The same prompt again: its BOS and 2 tokens kept are still at the head of the cache.
  res = post(cli, "/completion", body);
  EXPECT_EQ(res["tokens_predicted"], 100);
  EXPECT_EQ(res["tokens_cached"], 3);
  // llama-server's cache_prompt false: the whole prompt is evaluated again.
  json fresh = body;
  fresh["cache_prompt"] = false;
  res = post(cli, "/completion", fresh);
  EXPECT_EQ(res["tokens_cached"], 0);
  EXPECT_EQ(res["timings"]["prompt_n"], res["tokens_evaluated"]);
  EXPECT_NE(post(cli, "/completion", {{"prompt", "x"}, {"cache_prompt", "no"}}, 400)["error"]["message"].get<std::string>().find("cache_prompt"),
            std::string::npos);
  EXPECT_NE(post(cli, "/completion", {{"prompt", "x"}, {"n_keep", -2}}, 400)["error"]["message"].get<std::string>().find("n_keep"),
            std::string::npos);
}

// llama-server's slot actions: save the cache to a file of --slot-save-path, erase it, restore
// it; the next request then reuses the restored tokens. Names with a folder, unknown files,
// slots and actions are 400s; without --slot-save-path, 501.
TEST(OpenAiServer, SlotSaveRestoreErase) {
  MINFER_REQUIRE_SHARED();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("minfer-slots-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  server::ServeOptions o;
  o.slot_save_path = dir.string();
  auto r = start("stories260K.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  const json body = {{"prompt", "Once upon a time, there was a girl"}, {"n_predict", 8}, {"temperature", 0}};
  json res = post(cli, "/completion", body);
  const int64_t n_prompt = res["tokens_evaluated"];
  const std::string text = res["content"];
  json a = post(cli, "/slots/0?action=save", {{"filename", "a.bin"}});
  EXPECT_EQ(a["id_slot"], 0);
  EXPECT_EQ(a["filename"], "a.bin");
  EXPECT_EQ(a["n_saved"], n_prompt + 7);  // the prompt and the decoded tokens (not the last sampled)
  EXPECT_EQ(a["n_written"], std::filesystem::file_size(dir / "a.bin"));
  EXPECT_TRUE(a["timings"].contains("save_ms"));
  EXPECT_EQ(post(cli, "/slots/0?action=erase", json::object())["n_erased"], n_prompt + 7);
  res = post(cli, "/completion", {{"prompt", "Lily"}, {"n_predict", 4}});  // the cache holds something else
  a = post(cli, "/slots/0?action=restore", {{"filename", "a.bin"}});
  EXPECT_EQ(a["n_restored"], n_prompt + 7);
  EXPECT_EQ(a["n_read"], std::filesystem::file_size(dir / "a.bin"));
  res = post(cli, "/completion", body);
  EXPECT_EQ(res["tokens_cached"], n_prompt - 1);
  EXPECT_EQ(res["content"], text);

  for (const char* bad : {"../a.bin", "sub/a.bin", "", "..", "a.bin "})
    EXPECT_NE(post(cli, "/slots/0?action=save", {{"filename", bad}}, 400)["error"]["message"].get<std::string>().find("invalid filename"),
              std::string::npos) << bad;
  EXPECT_NE(post(cli, "/slots/0?action=restore", {{"filename", "none.bin"}}, 400)["error"]["message"].get<std::string>().find("no saved slot"),
            std::string::npos);
  EXPECT_NE(post(cli, "/slots/1?action=save", {{"filename", "b.bin"}}, 400)["error"]["message"].get<std::string>().find("slot id"),
            std::string::npos);
  EXPECT_NE(post(cli, "/slots/0?action=copy", {{"filename", "b.bin"}}, 400)["error"]["message"].get<std::string>().find("'action'"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "b.bin"));
  std::filesystem::remove_all(dir);

  auto plain = start("stories260K.gguf");
  httplib::Client pc("127.0.0.1", plain->port);
  EXPECT_NE(post(pc, "/slots/0?action=save", {{"filename", "a.bin"}}, 501)["error"]["message"].get<std::string>().find("--slot-save-path"),
            std::string::npos);
}

// llama-server's other sampler fields reach the sampler (its settings echo them) and bad ones
// are 400s naming them. Greedy with the chain reordered is still llama.cpp's greedy text.
TEST(OpenAiServer, LlamaCppSamplerFields) {
  MINFER_REQUIRE_SHARED();
  auto r = start("stories260K.gguf");
  httplib::Client cli("127.0.0.1", r->port);
  const json golden = read_json("golden/models/stories260K.greedy64.json");
  const json& c = golden["cases"][0];
  json body = {{"prompt", c["prompt_text"]}, {"n_predict", 64}, {"temperature", 0}, {"ignore_eos", true},
               {"samplers", {"top_k", "top_p", "temperature"}}, {"top_n_sigma", 2.0}, {"min_keep", 2}};
  json res = post(cli, "/completion", body);
  const std::string want = c["greedy"]["text"];
  EXPECT_EQ(as_detokenized(res["content"], want), want);
  EXPECT_EQ(res["generation_settings"]["samplers"], json({"top_k", "top_p", "temperature"}));
  EXPECT_EQ(res["generation_settings"]["top_n_sigma"], 2.0);
  EXPECT_EQ(res["generation_settings"]["min_keep"], 2);

  body = {{"prompt", "Once upon a time"}, {"n_predict", 16}, {"temperature", 0.8}, {"seed", 7}, {"mirostat", 2},
          {"mirostat_tau", 4.0}, {"mirostat_eta", 0.2}, {"typical_p", 0.9}, {"xtc_probability", 0.3},
          {"xtc_threshold", 0.2}, {"dynatemp_range", 0.5}, {"dynatemp_exponent", 1.5}, {"samplers", "kpt"}};
  res = post(cli, "/completion", body);
  EXPECT_EQ(res["tokens_predicted"], 16);
  const json& g = res["generation_settings"];
  EXPECT_EQ(g["mirostat"], 2);
  EXPECT_FLOAT_EQ(g["mirostat_tau"].get<float>(), 4.0f);
  EXPECT_FLOAT_EQ(g["typical_p"].get<float>(), 0.9f);
  EXPECT_FLOAT_EQ(g["xtc_probability"].get<float>(), 0.3f);
  EXPECT_FLOAT_EQ(g["dynatemp_range"].get<float>(), 0.5f);
  EXPECT_EQ(g["samplers"], json({"top_k", "top_p", "temperature"}));
  EXPECT_EQ(post(cli, "/completion", body)["content"], res["content"]);  // the seed decides

  auto error_of = [&](json b) { return post(cli, "/completion", b, 400)["error"]["message"].get<std::string>(); };
  EXPECT_NE(error_of({{"prompt", "x"}, {"dry_multiplier", -0.8}}).find("dry-multiplier"), std::string::npos);
  EXPECT_NE(error_of({{"prompt", "x"}, {"dry_sequence_breakers", "\n"}}).find("dry_sequence_breakers"), std::string::npos);
  // DRY: the greedy text's loop is broken (as the CLI test shows on the same prompt), with the
  // server's default breakers or a request's own.
  json dry = {{"prompt", "Once upon a time"}, {"n_predict", 200}, {"temperature", 0}, {"ignore_eos", true}};
  const std::string loop = post(cli, "/completion", dry)["content"];
  dry["dry_multiplier"] = 0.8;
  res = post(cli, "/completion", dry);
  EXPECT_NE(res["content"], loop);
  EXPECT_FLOAT_EQ(res["generation_settings"]["dry_multiplier"].get<float>(), 0.8f);
  EXPECT_EQ(res["generation_settings"]["dry_sequence_breakers"], json({"\n", ":", "\"", "*"}));
  dry["dry_sequence_breakers"] = {"."};
  dry["dry_allowed_length"] = 3;
  res = post(cli, "/completion", dry);
  EXPECT_EQ(res["generation_settings"]["dry_sequence_breakers"], json({"."}));
  EXPECT_EQ(res["generation_settings"]["dry_allowed_length"], 3);
  EXPECT_NE(error_of({{"prompt", "x"}, {"samplers", {"top_k", "bogus"}}}).find("bogus"), std::string::npos);
  EXPECT_NE(error_of({{"prompt", "x"}, {"mirostat", 3}}).find("mirostat"), std::string::npos);
  EXPECT_NE(error_of({{"prompt", "x"}, {"typical_p", 1.5}}).find("typical"), std::string::npos);
}

// --chat-template-kwargs (and --reasoning-budget 0) are the server's default template variables;
// a request's chat_template_kwargs override them key by key.
TEST(OpenAiServer, DefaultTemplateKwargs) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.template_kwargs = {{"enable_thinking", false}};
  auto r = start("tiny-qwen3-q4_0.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  const json msgs = {{{"role", "user"}, {"content", "Hi"}}};
  const std::string off = post(cli, "/apply-template", {{"messages", msgs}})["prompt"];
  EXPECT_NE(off.find("<think>\n\n</think>"), std::string::npos) << off;
  const std::string on = post(cli, "/apply-template", {{"messages", msgs}, {"chat_template_kwargs", {{"enable_thinking", true}}}})["prompt"];
  EXPECT_EQ(on.find("<think>"), std::string::npos) << on;
}

TEST(OpenAiServer, PropsAndApplyTemplate) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.sampling.temp = 0.25f;
  o.n_predict = 77;
  o.model_path = "models/tiny-qwen3-q4_0.gguf";
  auto r = start("tiny-qwen3-q4_0.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  auto res = cli.Get("/props");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const json p = json::parse(res->body);
  EXPECT_EQ(p["total_slots"], 1);
  EXPECT_EQ(p["model_path"], "models/tiny-qwen3-q4_0.gguf");
  EXPECT_EQ(p["chat_template"], *r->model->tokenizer().chat_template());
  EXPECT_EQ(p["default_generation_settings"]["n_ctx"], 256);
  EXPECT_EQ(p["default_generation_settings"]["params"]["n_predict"], 77);
  EXPECT_FLOAT_EQ(p["default_generation_settings"]["params"]["temperature"].get<float>(), 0.25f);
  EXPECT_EQ(p["eos_token"], r->model->tokenizer().token_text(r->model->tokenizer().eos()));
  // /apply-template renders the golden chat prompt without generating.
  const json golden = read_json("golden/models/tiny-qwen3-q4_0.chat-hi.json");
  EXPECT_EQ(post(cli, "/apply-template", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}})["prompt"], golden["prompt_text"]);
}

TEST(OpenAiServer, LogprobsMatchLlamaCpp) {
  MINFER_REQUIRE_SHARED();
  auto r = start("stories260K.gguf");
  httplib::Client cli("127.0.0.1", r->port);
  const json golden = read_json("golden/models/stories260K.once-upon-a-time.json");
  const size_t n_prompt = golden["prompt_ids"].size(), n_gen = golden["greedy"]["ids"].size();
  json body = {{"prompt", golden["prompt_text"]}, {"max_tokens", n_gen}, {"temperature", 0},
               {"ignore_eos", true}, {"logprobs", 20}};
  const json res = post(cli, "/v1/completions", body);
  const json& content = res["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), n_gen);
  for (size_t j = 0; j < n_gen; ++j) {
    const json& e = content[j];
    EXPECT_EQ(e["id"], golden["greedy"]["ids"][j]) << "token " << j;
    ASSERT_EQ(e["top_logprobs"].size(), 20u);
    std::map<int, double> ours;
    for (const json& t : e["top_logprobs"]) ours[t["id"].get<int>()] = t["logprob"].get<double>();
    EXPECT_DOUBLE_EQ(ours.at(e["id"].get<int>()), e["logprob"].get<double>());
    const json& want = golden["positions"][n_prompt - 1 + j]["top"];
    for (size_t k = 0; k < 10; ++k) {
      const int id = want[k]["id"];
      ASSERT_TRUE(ours.count(id)) << "token " << j << ": golden top id " << id << " missing";
      EXPECT_NEAR(ours[id], want[k]["logprob"].get<double>(), 1e-3) << "token " << j << " id " << id;
    }
  }

  body["stream"] = true;
  auto sres = cli.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(sres);
  json streamed = json::array();
  for (const std::string& e : sse_payloads(sres->body)) {
    if (e == "[DONE]") continue;
    const json chunk = json::parse(e);
    for (const json& t : chunk["choices"][0]["logprobs"]["content"]) streamed.push_back(t);
  }
  EXPECT_TRUE(streamed == content) << "streamed " << streamed.size() << " entries, whole " << content.size();

  // logit_bias: banning the greedy first token (",") gives llama.cpp's second choice; forcing the
  // end-of-sequence token ends the reply at once, with no log-probability entry for it.
  const json& first_top = golden["positions"][n_prompt - 1]["top"];
  json banned = {{"prompt", golden["prompt_text"]}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", 1},
                 {"logit_bias", {{std::to_string(first_top[0]["id"].get<int>()), false}}}};
  json bres = post(cli, "/v1/completions", banned);
  EXPECT_EQ(bres["choices"][0]["logprobs"]["content"][0]["id"], first_top[1]["id"]);
  // (log-probabilities stay those of the raw logits, as llama-server's)
  EXPECT_NEAR(bres["choices"][0]["logprobs"]["content"][0]["logprob"].get<double>(), first_top[1]["logprob"].get<double>(), 1e-3);
  json forced = banned;
  forced["max_tokens"] = 8;
  forced["logit_bias"] = {{"2", 100}};  // stories260K's EOS
  bres = post(cli, "/v1/completions", forced);
  EXPECT_EQ(bres["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(bres["choices"][0]["text"], "");
  EXPECT_EQ(bres["usage"]["completion_tokens"], 1);
  EXPECT_TRUE(bres["choices"][0]["logprobs"]["content"].empty());
  forced["logit_bias"] = {{"512", 1}};  // one past the vocabulary
  EXPECT_NE(post(cli, "/v1/completions", forced, 400)["error"]["message"].get<std::string>().find("vocabulary"),
            std::string::npos);

  // The chat endpoint asks with logprobs: true; top_logprobs: 0 gives each token's own only.
  auto chat = start("tiny-qwen3-q4_0.gguf");
  httplib::Client cli2("127.0.0.1", chat->port);
  const json hi = read_json("golden/models/tiny-qwen3-q4_0.chat-hi.json");
  const json cres = post(cli2, "/v1/chat/completions",
                         {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 8},
                          {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 0}});
  const json& cc = cres["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(cc.size(), 8u);
  std::string text;
  for (size_t j = 0; j < 8; ++j) {
    EXPECT_EQ(cc[j]["id"], hi["greedy"]["ids"][j]);
    EXPECT_TRUE(cc[j]["top_logprobs"].empty());
    EXPECT_LT(cc[j]["logprob"].get<double>(), 0.0);
    for (const json& b : cc[j]["bytes"]) text += char(b.get<int>());
  }
  EXPECT_EQ(text, cres["choices"][0]["message"]["content"]);  // the bytes spell the reply
}

TEST(OpenAiServer, ChatRendersTheTemplateAndReusesTheCache) {
  MINFER_REQUIRE_SHARED();
  auto r = start("tiny-qwen3-q4_0.gguf");
  httplib::Client cli("127.0.0.1", r->port);
  const json golden = read_json("golden/models/tiny-qwen3-q4_0.chat-hi.json");
  const json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                     {"max_tokens", 32},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  // The Qwen3 template renders the golden prompt "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n".
  const json tok = post(cli, "/tokenize", {{"content", golden["prompt_text"]}});
  EXPECT_EQ(tok["tokens"], golden["prompt_ids"]);
  json res = post(cli, "/v1/chat/completions", body);
  EXPECT_EQ(res["object"], "chat.completion");
  EXPECT_EQ(res["usage"]["prompt_tokens"], golden["prompt_ids"].size());
  EXPECT_EQ(res["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(res["choices"][0]["message"]["role"], "assistant");
  const std::string first = res["choices"][0]["message"]["content"];
  EXPECT_EQ(first, golden["greedy"]["text"]);

  // Again: all but the last prompt token come from the cache, and the reply is the same.
  res = post(cli, "/v1/chat/completions", body);
  EXPECT_EQ(res["usage"]["prompt_tokens_details"]["cached_tokens"], golden["prompt_ids"].size() - 1);
  EXPECT_EQ(res["timings"]["prompt_n"], 1);
  EXPECT_EQ(res["choices"][0]["message"]["content"], first);

  // The next turn of the conversation prefills only what is new.
  json next = body;
  next["messages"].push_back({{"role", "assistant"}, {"content", first}});
  next["messages"].push_back({{"role", "user"}, {"content", "More"}});
  next["max_tokens"] = 4;
  res = post(cli, "/v1/chat/completions", next);
  const int64_t cached = res["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(cached, int64_t(golden["prompt_ids"].size()));
  EXPECT_EQ(res["timings"]["prompt_n"].get<int64_t>(), res["usage"]["prompt_tokens"].get<int64_t>() - cached);
  // ... and gives what a fresh server gives.
  auto fresh = start("tiny-qwen3-q4_0.gguf");
  httplib::Client cli2("127.0.0.1", fresh->port);
  const json res2 = post(cli2, "/v1/chat/completions", next);
  EXPECT_EQ(res2["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(res2["choices"][0]["message"]["content"], res["choices"][0]["message"]["content"]);

  // Streamed: a role chunk, text chunks, a finish chunk, the usage chunk, [DONE].
  json streamed = body;
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  auto sres = cli.Post("/v1/chat/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(sres);
  const auto events = sse_payloads(sres->body);
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[0])["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 1; i + 3 < events.size(); ++i)
    text += json::parse(events[i])["choices"][0]["delta"]["content"].get<std::string>();
  EXPECT_EQ(text, first);
  EXPECT_EQ(json::parse(events[events.size() - 3])["choices"][0]["finish_reason"], "length");
  const json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 32);

  // chat_template_kwargs reach the template: Qwen3's enable_thinking = false writes an empty
  // think block after the assistant header, as Hugging Face's rendering does.
  json no_think = body;
  no_think["max_tokens"] = 1;
  no_think["chat_template_kwargs"] = {{"enable_thinking", false}};
  const json with_block = post(cli, "/tokenize",
                               {{"content", golden["prompt_text"].get<std::string>() + "<think>\n\n</think>\n\n"}});
  EXPECT_EQ(post(cli, "/v1/chat/completions", no_think)["usage"]["prompt_tokens"], with_block["tokens"].size());
  EXPECT_GT(with_block["tokens"].size(), golden["prompt_ids"].size());

  // Seeded sampling is repeatable.
  json seeded = body;
  seeded["temperature"] = 1.0;
  seeded["seed"] = 1234;
  seeded["max_tokens"] = 8;
  EXPECT_EQ(post(cli, "/v1/chat/completions", seeded)["choices"][0]["message"]["content"],
            post(cli, "/v1/chat/completions", seeded)["choices"][0]["message"]["content"]);
  // A stop string ends the reply before it, with finish_reason "stop".
  const std::string cut = first.substr(0, first.find(' ', 3));
  json stopped = body;
  stopped["stop"] = first.substr(cut.size(), 4);
  res = post(cli, "/v1/chat/completions", stopped);
  EXPECT_EQ(res["choices"][0]["message"]["content"], cut);
  EXPECT_EQ(res["choices"][0]["finish_reason"], "stop");
}

TEST(OpenAiServer, ModelsHealthAndTokenizerEndpoints) {
  MINFER_REQUIRE_SHARED();
  auto r = start("stories260K.gguf");
  httplib::Client cli("127.0.0.1", r->port);
  auto res = cli.Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body)["status"], "ok");
  res = cli.Get("/v1/models");
  ASSERT_TRUE(res);
  const json m = json::parse(res->body);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "stories260K.gguf");
  EXPECT_EQ(m["data"][0]["object"], "model");
  EXPECT_EQ(m["data"][0]["meta"]["n_ctx"], 256);
  const json golden = read_json("golden/models/stories260K.once-upon-a-time.json");
  const json tok = post(cli, "/tokenize", {{"content", golden["prompt_text"]}, {"add_special", true}});
  EXPECT_EQ(tok["tokens"], golden["prompt_ids"]);
  // llama_detokenize's text: special tokens rendered, the space prefix of an SPM vocabulary removed.
  json ids = golden["prompt_ids"];
  EXPECT_EQ(post(cli, "/detokenize", {{"tokens", ids}})["content"], "<s> " + golden["prompt_text"].get<std::string>());
  ids.erase(ids.begin());
  EXPECT_EQ(post(cli, "/detokenize", {{"tokens", ids}})["content"], golden["prompt_text"]);
  // with_pieces: llama-server's README example for stories260K, "á" (C3 A1) as two byte
  // tokens whose pieces are not whole UTF-8 and come as bytes; whole pieces come as text.
  const json pieces = post(cli, "/tokenize", {{"content", "Once á"}, {"with_pieces", true}})["tokens"];
  ASSERT_GE(pieces.size(), 3u);
  EXPECT_EQ(pieces[0], json::parse(R"({"id": 403, "piece": " Once"})"));
  EXPECT_EQ(pieces[pieces.size() - 2], json::parse(R"({"id": 198, "piece": [195]})"));
  EXPECT_EQ(pieces.back(), json::parse(R"({"id": 164, "piece": [161]})"));
  // No chat template in this file: /apply-template says so.
  EXPECT_NE(post(cli, "/apply-template", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}, 400)["error"]["message"]
                .get<std::string>()
                .find("no chat template"),
            std::string::npos);
}

// A request's grammar constrains its reply, whole and streamed (checked against std::regex);
// JSON mode gives text that parses as a JSON object (nlohmann::json as the judge), then the end
// of generation; the server's default grammar (--grammar) applies to requests without one.
TEST(OpenAiServer, GrammarsConstrainTheReply) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.grammar = std::make_shared<const grammar::Grammar>(grammar::parse_gbnf("root ::= \" \" [a-z]+ \" \" [a-z]+"));
  auto r = start("stories260K.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  const std::regex words(" ?[a-z]+( [a-z]+){2,7}\\.");
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 100}, {"temperature", 0},
               {"grammar", "root ::= (\" \" [a-z]+){3,8} \".\""}};
  json res = post(cli, "/v1/completions", body);
  const std::string text = res["choices"][0]["text"];
  EXPECT_TRUE(std::regex_match(text, words)) << text;
  EXPECT_EQ(res["choices"][0]["finish_reason"], "stop");
  body["stream"] = true;
  auto sres = cli.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(sres);
  std::string streamed;
  for (const std::string& p : sse_payloads(sres->body))
    if (p != "[DONE]") streamed += json::parse(p)["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(streamed, text);

  for (const char* prompt : {"Once upon a time", "The dog"}) {
    json js = {{"prompt", prompt}, {"max_tokens", 200}, {"temperature", 0},
               {"response_format", {{"type", "json_object"}}}};
    res = post(cli, "/v1/completions", js);
    const std::string out = res["choices"][0]["text"];
    ASSERT_EQ(res["choices"][0]["finish_reason"], "stop") << out;
    json parsed;
    ASSERT_NO_THROW(parsed = json::parse(out)) << out;
    EXPECT_TRUE(parsed.is_object()) << out;
  }
  // A JSON schema (OpenAI's structured outputs): the reply is JSON of its shape.
  json schema = {{"type", "object"},
                 {"properties", {{"word", {{"type", "string"}, {"maxLength", 8}}}, {"n", {{"type", "integer"}, {"minimum", 10}, {"maximum", 99}}}}},
                 {"required", {"word", "n"}}};
  for (const char* prompt : {"Once upon a time", "The dog"}) {
    res = post(cli, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 200}, {"temperature", 0},
                                        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "w"}, {"schema", schema}}}}}});
    const std::string out = res["choices"][0]["text"];
    ASSERT_EQ(res["choices"][0]["finish_reason"], "stop") << out;
    json parsed;
    ASSERT_NO_THROW(parsed = json::parse(out)) << out;
    ASSERT_TRUE(parsed.is_object() && parsed.size() == 2 && parsed["word"].is_string() && parsed["n"].is_number_integer()) << out;
    EXPECT_LE(parsed["word"].get<std::string>().size(), 8u) << out;
    EXPECT_TRUE(parsed["n"].get<int>() >= 10 && parsed["n"].get<int>() <= 99) << out;
  }

  res = post(cli, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 20}, {"temperature", 0}});
  EXPECT_TRUE(std::regex_match(res["choices"][0]["text"].get<std::string>(), std::regex(" [a-z]+ [a-z]+")))
      << res["choices"][0]["text"];
  EXPECT_NE(post(cli, "/v1/completions", {{"prompt", "x"}, {"grammar", "root ::= ("}}, 400)["error"]["message"]
                .get<std::string>()
                .find("'grammar'"),
            std::string::npos);
}

TEST(OpenAiServer, ToolCalls) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.ctx.n_ctx = 512;  // room for the tools in the system prompt
  auto r = start("tiny-qwen3-q4_0.gguf", o);  // its template: Qwen3's, Hermes <tool_call> syntax
  httplib::Client cli("127.0.0.1", r->port);
  cli.set_read_timeout(300);  // a grammar over Qwen's 151k tokens takes seconds under the sanitizers
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]}}},
    {"type": "function", "function": {"name": "now", "description": "The time"}}])");
  const json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
                     {"tools", tools},
                     {"tool_choice", "required"},
                     {"max_tokens", 120},
                     {"temperature", 0}};
  // "required": the grammar makes the reply one call, which comes back as tool_calls.
  json res = post(cli, "/v1/chat/completions", body);
  const json choice = res["choices"][0];
  ASSERT_EQ(choice["finish_reason"], "tool_calls") << res.dump();
  EXPECT_TRUE(choice["message"]["content"].is_null());
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  const json call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().size(), 32u);
  const std::string name = call["function"]["name"];
  const json args = json::parse(call["function"]["arguments"].get<std::string>());
  if (name == "get_weather") {
    EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Rome") << args;
    EXPECT_TRUE(args["days"].is_number_integer() && args["days"] >= 1 && args["days"] <= 7) << args;
  } else {
    EXPECT_EQ(name, "now");
    EXPECT_TRUE(args.is_object());
  }

  // Streamed: the role, one delta with the call, the finish, [DONE].
  json streamed = body;
  streamed["stream"] = true;
  auto sres = cli.Post("/v1/chat/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(sres);
  const auto events = sse_payloads(sres->body);
  ASSERT_EQ(events.size(), 4u) << sres->body;
  const json delta = json::parse(events[1])["choices"][0]["delta"]["tool_calls"];
  ASSERT_EQ(delta.size(), 1u) << events[1];
  EXPECT_EQ(delta[0]["index"], 0);
  EXPECT_EQ(delta[0]["function"], call["function"]);
  EXPECT_EQ(json::parse(events[2])["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(events[3], "[DONE]");

  // A named function, several calls allowed: every call is to it.
  json named = body;
  named["tool_choice"] = {{"type", "function"}, {"function", {{"name", "now"}}}};
  named["parallel_tool_calls"] = true;
  res = post(cli, "/v1/chat/completions", named);
  ASSERT_EQ(res["choices"][0]["finish_reason"], "tool_calls") << res.dump();
  for (const json& c : res["choices"][0]["message"]["tool_calls"]) EXPECT_EQ(c["function"]["name"], "now");

  // "auto": this random model writes no call; its text streams out whole all the same.
  json free = body;
  free["tool_choice"] = "auto";
  free["max_tokens"] = 24;
  res = post(cli, "/v1/chat/completions", free);
  EXPECT_EQ(res["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(res["choices"][0]["message"].contains("tool_calls"));
  free["stream"] = true;
  sres = cli.Post("/v1/chat/completions", free.dump(), "application/json");
  ASSERT_TRUE(sres);
  std::string text;
  for (const std::string& p : sse_payloads(sres->body)) {
    if (p == "[DONE]") continue;
    const json d = json::parse(p)["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  EXPECT_EQ(text, res["choices"][0]["message"]["content"]);

  // "auto" with the call's opening made likely (a logit bias on Qwen's <tool_call> token): from
  // that marker on the lazy grammar holds this random model to a well-formed call.
  const json marker = post(cli, "/tokenize", {{"content", "<tool_call>"}})["tokens"];
  ASSERT_EQ(marker.size(), 1u);
  json nudged = body;
  nudged["tool_choice"] = "auto";
  nudged["chat_template_kwargs"] = {{"enable_thinking", false}};
  nudged["logit_bias"] = {{std::to_string(marker[0].get<int>()), 100}};
  res = post(cli, "/v1/chat/completions", nudged);
  ASSERT_EQ(res["choices"][0]["finish_reason"], "tool_calls") << res.dump();
  ASSERT_EQ(res["choices"][0]["message"]["tool_calls"].size(), 1u);
  EXPECT_TRUE(json::parse(res["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>()).is_object());

  // A conversation with a call and its result, sent as OpenAI clients send it (arguments as
  // JSON text, content null), renders as Hugging Face renders the golden case.
  const json cases = read_json("golden/templates/CASES.json");
  for (const json& c : cases) {
    if (c["template_file"] != "templates/Qwen-Qwen3-0.6B.jinja" || c["case"] != "tools_call_and_result") continue;
    json history = {{"messages", c["vars"]["messages"]}, {"tools", c["vars"]["tools"]}, {"max_tokens", 1}};
    json& m = history["messages"][2];
    m["content"] = nullptr;
    m["tool_calls"][0]["id"] = "call_1";
    m["tool_calls"][0]["function"]["arguments"] = R"({"location": "Paris, France", "unit": "celsius"})";
    res = post(cli, "/v1/chat/completions", history);
    EXPECT_EQ(res["usage"]["prompt_tokens"], post(cli, "/tokenize", {{"content", c["expected"]}})["tokens"].size());
  }
}

TEST(OpenAiServer, ReasoningComesApartFromTheAnswer) {
  MINFER_REQUIRE_SHARED();
  auto r = start("tiny-qwen3-q4_0.gguf");
  httplib::Client cli("127.0.0.1", r->port);
  // A grammar makes this random model write a think block and an answer.
  json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
               {"grammar", R"(root ::= "<think>
I should greet.
</think>

Hello there")"},
               {"max_tokens", 60},
               {"temperature", 0}};
  json res = post(cli, "/v1/chat/completions", body);
  EXPECT_EQ(res["choices"][0]["message"]["reasoning_content"], "I should greet.");
  EXPECT_EQ(res["choices"][0]["message"]["content"], "Hello there");
  EXPECT_EQ(res["choices"][0]["finish_reason"], "stop");
  // Streamed: reasoning_content deltas first, then content deltas; they add up to the same.
  body["stream"] = true;
  auto sres = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(sres);
  std::string reasoning, content;
  for (const std::string& p : sse_payloads(sres->body)) {
    if (p == "[DONE]") continue;
    const json d = json::parse(p)["choices"][0]["delta"];
    if (d.contains("reasoning_content")) {
      EXPECT_TRUE(content.empty()) << "reasoning after the answer began";
      reasoning += d["reasoning_content"].get<std::string>();
    }
    if (d.contains("content")) content += d["content"].get<std::string>();
  }
  EXPECT_EQ(reasoning, "I should greet.");
  EXPECT_EQ(content, "Hello there");
  // reasoning_format "none" (llama-server's): the block stays in the content.
  body["stream"] = false;
  body["reasoning_format"] = "none";
  res = post(cli, "/v1/chat/completions", body);
  EXPECT_EQ(res["choices"][0]["message"]["content"], "<think>\nI should greet.\n</think>\n\nHello there");
  EXPECT_FALSE(res["choices"][0]["message"].contains("reasoning_content"));

  // A template whose prompt opens the block (DeepSeek R1's ends with "<think>\n"): the reply
  // starts inside it.
  std::ifstream in(test::shared_path("templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"));
  server::ServeOptions o;
  o.chat_template = std::string(std::istreambuf_iterator<char>(in), {});
  auto r1 = start("tiny-qwen3-q4_0.gguf", o);
  httplib::Client cli1("127.0.0.1", r1->port);
  body.erase("reasoning_format");
  body["grammar"] = R"(root ::= "Thinking.
</think>

Done")";
  res = post(cli1, "/v1/chat/completions", body);
  EXPECT_EQ(res["choices"][0]["message"]["reasoning_content"], "Thinking.");
  EXPECT_EQ(res["choices"][0]["message"]["content"], "Done");
}

// Llama 3's syntax end to end: a model with Llama 3's vocabulary and its 3.1 template (generated
// here; its weights are random), a required call under the grammar of Llama 3's JSON.
TEST(OpenAiServer, Llama3ToolCalls) {
  MINFER_REQUIRE_SHARED();
  const auto dir = std::filesystem::temp_directory_path() / ("minfer-llama3-tools-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};
  tools::GenModelOptions g;
  g.preset = "tiny-llama";
  g.n_layer = 1;
  g.tokenizer = test::shared_path("tokenizers/llama3/tokenizer.json");
  g.chat_template_file = test::shared_path("templates/meta-llama-Llama-3.1-8B-Instruct.jinja");
  const std::string path = (dir / "llama3.gguf").string();
  tools::generate_model(g, path);
  server::ServeOptions o;
  o.ctx.n_ctx = 1024;
  auto r = start(path, o);
  httplib::Client cli("127.0.0.1", r->port);
  cli.set_read_timeout(300);
  const json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Rome?"}}}},
                     {"tools", json::parse(R"([{"type": "function", "function": {"name": "get_weather",
                        "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]}},
                        "required": ["city"]}}}])")},
                     {"tool_choice", "required"},
                     {"max_tokens", 60},
                     {"temperature", 0}};
  const json res = post(cli, "/v1/chat/completions", body);
  const json choice = res["choices"][0];
  ASSERT_EQ(choice["finish_reason"], "tool_calls") << res.dump();
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  const json args = json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Rome") << args;
  EXPECT_TRUE(choice["message"]["content"].is_null());

  // The next turn: the call (arguments as JSON text) and its result go back through the 3.1
  // template, which writes the arguments with tojson: the server hands it an object.
  json next = body;
  next.erase("tool_choice");
  next["max_tokens"] = 1;
  next["messages"].push_back(choice["message"]);
  next["messages"].push_back({{"role", "tool"}, {"tool_call_id", choice["message"]["tool_calls"][0]["id"]}, {"content", "sunny"}});
  const json turn = post(cli, "/v1/chat/completions", next);
  EXPECT_GT(turn["usage"]["prompt_tokens"].get<int>(), res["usage"]["prompt_tokens"].get<int>());
}

// /infill with Qwen's vocabulary: the FIM prompt as llama-server lays it out, then a completion.
TEST(OpenAiServer, Infill) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.ctx.n_ctx = 2048 + 2 * 8 + 64;  // room for the extra context after llama-server's batch
  auto r = start("tiny-qwen3-q4_0.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  const json body = {{"input_prefix", "def add(a, b):\n    "},
                     {"input_suffix", "\n\nprint(add(1, 2))\n"},
                     {"input_extra", {{{"filename", "util.py"}, {"text", "x = 1\n"}}}},
                     {"n_predict", 8},
                     {"temperature", 0}};
  const json res = post(cli, "/infill", body);
  EXPECT_EQ(res["prompt"],
            "<|repo_name|>myproject\n<|file_sep|>util.py\nx = 1\n<|file_sep|>filename\n"
            "<|fim_prefix|>def add(a, b):\n    <|fim_suffix|>\n\nprint(add(1, 2))\n<|fim_middle|>");
  EXPECT_EQ(res["tokens_predicted"], 8);
  EXPECT_EQ(res["stop"], true);
}

// --embeddings: /v1/embeddings gives runtime::embed's vectors (tested against the logits in
// tests/runtime/test_embeddings.cpp) in OpenAI's shape, as floats or base64; text endpoints 501.
TEST(OpenAiServer, Embeddings) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.embeddings = true;
  o.pooling = runtime::Pooling::Mean;  // stories260K's file names no pooling type
  auto r = start("stories260K.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  const json res = post(cli, "/v1/embeddings", {{"input", {"Once upon a time", "The dog ran"}}, {"model", "x"}});
  ASSERT_EQ(res["data"].size(), 2u);
  EXPECT_EQ(res["object"], "list");
  EXPECT_EQ(res["data"][1]["index"], 1);
  EXPECT_EQ(res["data"][0]["object"], "embedding");
  runtime::ContextParams p;
  p.n_ctx = 64;
  p.n_threads = 1;
  p.embeddings = true;
  runtime::Context ctx(*r->model, p);
  const tok::Tokenizer& tok = r->model->tokenizer();
  int64_t n_tokens = 0;
  for (int i = 0; i < 2; ++i) {
    const std::string text = i == 0 ? "Once upon a time" : "The dog ran";
    const std::vector<int32_t> ids = tok.encode(text, true, true);
    n_tokens += int64_t(ids.size());
    const std::vector<float> want = runtime::embed(ctx, ids, runtime::Pooling::Mean);
    const std::vector<float> got = res["data"][i]["embedding"];
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-6f);
  }
  EXPECT_EQ(res["usage"]["prompt_tokens"], n_tokens);

  // Token ids give the same vector as their text; base64 holds the same float32 bytes.
  const std::vector<int32_t> ids = tok.encode("Once upon a time", true, true);
  const json by_ids = post(cli, "/v1/embeddings", {{"input", ids}, {"encoding_format", "base64"}});
  const std::string b64 = by_ids["data"][0]["embedding"];
  auto value = [](char c) -> uint32_t {
    return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52 : c == '+' ? 62 : 63;
  };
  std::string bytes;
  for (size_t i = 0; i + 3 < b64.size(); i += 4) {
    const uint32_t n = value(b64[i]) << 18 | value(b64[i + 1]) << 12 | (b64[i + 2] == '=' ? 0 : value(b64[i + 2]) << 6) |
                       (b64[i + 3] == '=' ? 0 : value(b64[i + 3]));
    bytes += char(n >> 16);
    if (b64[i + 2] != '=') bytes += char((n >> 8) & 255);
    if (b64[i + 3] != '=') bytes += char(n & 255);
  }
  const std::vector<float> first = res["data"][0]["embedding"];
  ASSERT_EQ(bytes.size(), first.size() * sizeof(float));
  std::vector<float> decoded(first.size());
  std::memcpy(decoded.data(), bytes.data(), bytes.size());
  EXPECT_EQ(decoded, first);

  EXPECT_EQ(post(cli, "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}, 501)["error"]["type"],
            "not_supported_error");
  post(cli, "/v1/completions", {{"prompt", "Once"}}, 501);
  EXPECT_NE(post(cli, "/v1/embeddings", {{"input", json::array()}}, 400)["error"]["message"].get<std::string>().find("'input'"),
            std::string::npos);
  post(cli, "/v1/embeddings", {{"input", "x"}, {"dimensions", 8}}, 400);

  // Without --pooling the model's own (none here): no single vector, and the error says what to do.
  server::ServeOptions o2;
  o2.embeddings = true;
  auto r2 = start("stories260K.gguf", o2);
  httplib::Client cli2("127.0.0.1", r2->port);
  EXPECT_NE(post(cli2, "/v1/embeddings", {{"input", "x"}}, 400)["error"]["message"].get<std::string>().find("--pooling"),
            std::string::npos);

  // llama-server's /embeddings: with pooling none a vector per token, not normalized; their
  // mean, normalized, is the mean-pooled server's vector, and with embd_normalize -1 that server
  // gives the mean itself.
  const json rows = post(cli2, "/embeddings", {{"content", "Once upon a time"}});
  ASSERT_TRUE(rows.is_array() && rows.size() == 1) << rows.dump();
  EXPECT_EQ(rows[0]["index"], 0);
  const auto per_token = rows[0]["embedding"].get<std::vector<std::vector<double>>>();
  ASSERT_EQ(per_token.size(), ids.size());
  std::vector<double> mean(per_token[0].size(), 0.0);
  for (const auto& row : per_token)
    for (size_t k = 0; k < row.size(); ++k) mean[k] += row[k] / double(per_token.size());
  double norm = 0;
  for (double v : mean) norm += v * v;
  norm = std::sqrt(norm);
  for (size_t k = 0; k < mean.size(); ++k) EXPECT_NEAR(mean[k] / norm, first[k], 1e-5) << k;
  const json raw = post(cli, "/embedding", {{"input", "Once upon a time"}, {"embd_normalize", -1}});
  const auto raw_mean = raw[0]["embedding"][0].get<std::vector<double>>();
  ASSERT_EQ(raw_mean.size(), mean.size());
  for (size_t k = 0; k < mean.size(); ++k) EXPECT_NEAR(raw_mean[k], mean[k], 1e-5) << k;
  const json same = post(cli, "/v1/embeddings", {{"input", "Once upon a time"}, {"embd_normalize", 2}});
  EXPECT_EQ(same["data"][0]["embedding"].get<std::vector<float>>(), first);
  post(cli, "/embeddings", {{"text", "x"}}, 400);
  post(cli, "/embeddings", {{"content", "x"}, {"embd_normalize", -2}}, 400);
}

TEST(OpenAiServer, ToolsNeedATemplateWithACallFormat) {
  MINFER_REQUIRE_SHARED();
  std::ifstream in(test::shared_path("templates/TinyLlama-TinyLlama-1.1B-Chat-v1.0.jinja"));
  server::ServeOptions o;
  o.chat_template = std::string(std::istreambuf_iterator<char>(in), {});
  auto r = start("stories260K.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
               {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
               {"max_tokens", 2}};
  EXPECT_NE(post(cli, "/v1/chat/completions", body, 400)["error"]["message"].get<std::string>().find(
                "no tool-call format"),
            std::string::npos);
  body["tool_choice"] = "none";
  EXPECT_EQ(post(cli, "/v1/chat/completions", body)["choices"][0]["finish_reason"], "length");
}

TEST(OpenAiServer, BadRequestsGetOpenAiErrors) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.max_body = 4096;
  auto r = start("stories260K.gguf", o);  // no chat template in this file
  httplib::Client cli("127.0.0.1", r->port);
  auto error_of = [&](const char* path, const std::string& body, int status) {
    auto res = cli.Post(path, body, "application/json");
    EXPECT_TRUE(res);
    if (!res) return std::string();
    EXPECT_EQ(res->status, status) << path << " " << body.substr(0, 80);
    const json j = json::parse(res->body);
    EXPECT_EQ(j["error"]["code"], status);
    return j["error"]["message"].get<std::string>();
  };
  EXPECT_NE(error_of("/v1/completions", "{\"prompt\":", 400).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("/v1/completions", R"({"prompt":"x","n":3})", 400).find("'n'"), std::string::npos);
  EXPECT_NE(error_of("/v1/completions", R"({"prompt":"x","temperature":-1})", 400).find("temperature"),
            std::string::npos);
  EXPECT_NE(error_of("/v1/completions", R"({"prompt":[1, 100000]})", 400).find("vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}]})", 400)
                .find("no chat template"),
            std::string::npos);
  // 300 tokens do not fit 256 of context.
  std::string long_prompt;
  for (int i = 0; i < 300; ++i) long_prompt += " a";
  EXPECT_NE(error_of("/v1/completions", json{{"prompt", long_prompt}}.dump(), 400).find("does not fit"),
            std::string::npos);
  error_of("/v1/completions", std::string(5000, ' '), 413);
  EXPECT_NE(error_of("/detokenize", R"({"tokens":[-1]})", 400).find("token ids"), std::string::npos);
  auto res = cli.Get("/v1/nothing");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(json::parse(res->body)["error"]["code"], 404);
  // DNS rebinding: a foreign Host header is refused on a loopback server.
  res = cli.Get("/health", {{"Host", "evil.example"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  // A text server has no embeddings (llama-server's 501).
  EXPECT_EQ(post(cli, "/v1/embeddings", {{"input", "x"}}, 501)["error"]["code"], 501);
  // The server still answers after all that.
  EXPECT_EQ(post(cli, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}})["usage"]["completion_tokens"], 2);
}

TEST(OpenAiServer, ApiKey) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.api_key = "sekrit";
  auto r = start("stories260K.gguf", o);
  httplib::Client cli("127.0.0.1", r->port);
  const std::string body = R"({"prompt":"Once","max_tokens":1})";
  auto res = cli.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(json::parse(res->body)["error"]["type"], "authentication_error");
  res = cli.Post("/v1/completions", {{"Authorization", "Bearer wrong"}}, body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = cli.Post("/v1/completions", {{"Authorization", "Bearer sekrit"}}, body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = cli.Get("/health");  // monitoring needs no key
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

// CORS as llama-server's --cors-origins: which pages' origins get Access-Control-Allow-Origin,
// and a browser's preflight (OPTIONS, which carries no API key) answered before the key check.
TEST(OpenAiServer, CorsOrigins) {
  MINFER_REQUIRE_SHARED();
  server::ServeOptions o;
  o.api_key = "sekrit";
  auto r = start("stories260K.gguf", o);  // the default: pages served from this machine
  httplib::Client cli("127.0.0.1", r->port);
  auto allowed = [&](const std::string& origin) {
    auto res = cli.Get("/v1/models", {{"Origin", origin}, {"Authorization", "Bearer sekrit"}});
    EXPECT_TRUE(res && res->status == 200);
    return res ? res->get_header_value("Access-Control-Allow-Origin") : "?";
  };
  EXPECT_EQ(allowed("http://localhost:5173"), "http://localhost:5173");
  EXPECT_EQ(allowed("http://127.0.0.1:3000"), "http://127.0.0.1:3000");
  EXPECT_EQ(allowed("http://[::1]:3000"), "http://[::1]:3000");
  EXPECT_EQ(allowed("https://example.com"), "");
  EXPECT_EQ(allowed("http://localhost.example.com"), "");
  EXPECT_EQ(allowed("null"), "");

  auto pre = cli.Options("/v1/chat/completions", {{"Origin", "http://localhost:5173"},
                                                  {"Access-Control-Request-Method", "POST"},
                                                  {"Access-Control-Request-Headers", "authorization, content-type"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "http://localhost:5173");
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Headers"), "authorization, content-type");
  // A refusal is readable by the page too (it can show why).
  auto res = cli.Post("/v1/completions", {{"Origin", "http://localhost:5173"}}, "{}", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->get_header_value("Access-Control-Allow-Origin"), "http://localhost:5173");
  r.reset();

  for (const auto& [setting, origin, expected] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"*", "https://example.com", "*"},
                                                                      {"*", "", "*"},
                                                                      {"none", "http://localhost:5173", ""},
                                                                      {"https://a.example, https://b.example", "https://b.example", "https://b.example"},
                                                                      {"https://a.example,https://b.example", "https://c.example", ""}}) {
    server::ServeOptions c;
    c.cors_origins = setting;
    auto rc = start("stories260K.gguf", c);
    httplib::Client cc("127.0.0.1", rc->port);
    auto got = origin.empty() ? cc.Get("/health") : cc.Get("/health", {{"Origin", origin}});
    ASSERT_TRUE(got);
    EXPECT_EQ(got->get_header_value("Access-Control-Allow-Origin"), expected) << setting << " " << origin;
  }
}

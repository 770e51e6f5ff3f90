// The viz server over the tiny Qwen3 model, through real HTTP: the graph endpoint serves the
// same graph as Context::graph_json (the --dump-graph-json format), a generation streams one
// node event per executed node per step, and bad requests get 4xx.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/test_data.h"
#include "runtime/context.h"
#include "runtime/model.h"
#include "server/assets.h"
#include "server/viz_server.h"

using namespace minfer;
using nlohmann::json;

namespace {

struct Running {
  std::unique_ptr<runtime::Model> model;
  std::unique_ptr<server::VizServer> srv;
  std::thread th;
  int port = 0;
  ~Running() {
    if (srv) srv->stop();
    if (th.joinable()) th.join();
  }
};

std::unique_ptr<Running> start() {
  auto r = std::make_unique<Running>();
  r->model = runtime::Model::load(test::shared_path("models/tiny-qwen3-q4_0.gguf"));
  server::VizOptions o;
  o.port = 0;
  o.ctx.n_ctx = 256;
  o.ctx.n_threads = 1;
  o.max_predict = 64;
  r->srv = std::make_unique<server::VizServer>(*r->model, o);
  r->port = r->srv->bind();
  r->th = std::thread([s = r->srv.get()] { s->listen(); });
  return r;
}

// Ids the executor runs, from the graph JSON: not inputs, not KV views, not bufferless orphans.
std::set<int> executed(const json& g) {
  std::set<int> ids;
  for (const auto& n : g["nodes"]) {
    const std::string op = n["op"];
    if (op == "Input" || op == "KvLoad") continue;
    if (n["buffer"].is_null() && op != "KvStore") continue;
    ids.insert(n["id"].get<int>());
  }
  return ids;
}

}  // namespace

TEST(VizServer, GraphEndpointServesTheExecutedGraph) {
  MINFER_REQUIRE_SHARED();
  auto r = start();
  httplib::Client cli("127.0.0.1", r->port);
  runtime::ContextParams cp;
  cp.n_ctx = 256;
  cp.n_threads = 1;
  runtime::Context ref(*r->model, cp);
  for (int nt : {1, 7}) {
    auto res = cli.Get(("/graph?n_tokens=" + std::to_string(nt)).c_str());
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    const json got = json::parse(res->body);
    json want = json::parse(ref.graph_json(nt, 1));
    EXPECT_EQ(got["nodes"], want["nodes"]) << "n_tokens " << nt;
    EXPECT_EQ(got["params"], want["params"]);
    EXPECT_EQ(got["params"]["gtype"], nt == 1 ? "Decode" : "Prefill");
    // The server adds the types and shapes of the weights the nodes read.
    ASSERT_TRUE(got["weights"].contains("blk.0.attn_q.weight"));
    EXPECT_EQ(got["weights"]["blk.0.attn_q.weight"]["type"], "Q4_0");
  }
  for (const char* bad : {"/graph?n_tokens=0", "/graph?n_tokens=abc", "/graph?n_tokens=2&n_out=3",
                          "/graph?n_tokens=100000"}) {
    auto res = cli.Get(bad);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << bad;
  }
}

TEST(VizServer, BadRequestsGet4xx) {
  MINFER_REQUIRE_SHARED();
  auto r = start();
  httplib::Client cli("127.0.0.1", r->port);
  auto res = cli.Post("/generate", "{\"prompt\":", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  res = cli.Post("/generate", R"({"prompt":"a","n_predict":65})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  res = cli.Post("/generate", std::string(100000, 'x'), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  res = cli.Get("/compare?a=/nonexistent-a&b=/nonexistent-b");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  // DNS rebinding: a foreign Host header is refused on a loopback server.
  res = cli.Get("/status", {{"Host", "evil.example:80"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  res = cli.Get("/status", {{"Host", "localhost:1234"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = cli.Get("/nope.js");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  // The page: the bundle when it was embedded, otherwise a page that says it is missing.
  res = cli.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  if (server::assets_present()) {
    EXPECT_NE(res->body.find("app.js"), std::string::npos);
  } else {
    EXPECT_NE(res->body.find("front-end was not built"), std::string::npos);
  }
}

TEST(VizServer, GenerationStreamsEveryExecutedNodeOfEveryStep) {
  MINFER_REQUIRE_SHARED();
  auto r = start();
  httplib::Client cli("127.0.0.1", r->port);
  const json prefill = json::parse(cli.Get("/graph?n_tokens=3")->body);
  const json decode = json::parse(cli.Get("/graph?n_tokens=1")->body);

  auto sub = r->srv->hub().subscribe();
  auto res = cli.Post("/generate", R"({"prompt":"one two three","n_predict":3})", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  ASSERT_EQ(json::parse(res->body)["n_prompt"], 3) << "the test assumes a 3-token prompt";
  // A second generation while one runs is refused (or, if the first already ended, accepted).
  auto again = cli.Post("/generate", R"({"prompt":"x","n_predict":1})", "application/json");
  ASSERT_TRUE(again);
  const bool second = again->status == 202;
  if (!second) {
    EXPECT_EQ(again->status, 409);
  }
  r->srv->wait_generation();
  if (second) r->srv->wait_generation();

  std::string text;
  for (std::string chunk; !(chunk = sub->wait_and_take(0)).empty();) text += chunk;
  // Fold the stream of the first run.
  std::vector<json> steps;
  std::vector<std::set<int>> nodes;
  int tokens = 0;
  json done;
  size_t pos = 0;
  while ((pos = text.find("event: ", pos)) != std::string::npos) {
    const size_t eol = text.find('\n', pos);
    const std::string ev = text.substr(pos + 7, eol - pos - 7);
    const size_t d = text.find("data: ", eol) + 6;
    const json data = json::parse(text.substr(d, text.find('\n', d) - d));
    pos = d;
    if (data.contains("run") && data["run"] != 1) continue;
    if (ev == "dropped") FAIL() << "events dropped with a large queue";
    if (ev == "step") {
      steps.push_back(data);
      nodes.emplace_back();
    } else if (ev == "node") {
      ASSERT_EQ(data["step"].get<size_t>(), steps.size() - 1);
      EXPECT_TRUE(nodes.back().insert(data["id"].get<int>()).second) << "node reported twice";
    } else if (ev == "token") {
      ++tokens;
    } else if (ev == "done") {
      done = data;
    }
  }
  ASSERT_EQ(steps.size(), 3u);  // prefill + 2 decodes for 3 sampled tokens
  EXPECT_EQ(tokens, 3);
  EXPECT_EQ(done["n_generated"], 3);
  EXPECT_EQ(done["reason"], "length");
  EXPECT_EQ(steps[0]["graph"], "prefill");
  EXPECT_EQ(steps[1]["graph"], "decode");
  EXPECT_EQ(steps[2]["reused"], true);
  EXPECT_EQ(steps[2]["n_past"], 4);
  EXPECT_EQ(nodes[0], executed(prefill));
  EXPECT_EQ(nodes[1], executed(decode));
  EXPECT_EQ(nodes[2], executed(decode));
  r->srv->hub().unsubscribe(sub);
}

#include "server/viz_server.h"

#include <httplib.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "gguf/gguf.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "server/assets.h"
#include "server/compare.h"
#include "server/http_common.h"
#include "server/node_stats.h"
#include "tokenizer/tokenizer.h"

namespace minfer::server {
namespace {

using nlohmann::json;

const char* kMissingAssetsPage = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>minfer viz: front-end missing</title></head>
<body style="font-family: sans-serif; max-width: 50em; margin: 3em auto">
<h1>minfer viz: the front-end was not built</h1>
<p>This <code>minfer</code> binary was built without the viz page: <code>viz/dist</code> did not
exist when it was compiled, so there is nothing to show here.</p>
<p>To get the page, bundle it and rebuild:</p>
<pre>scripts/build-viz.sh            # npm ci + esbuild: writes viz/dist
cmake --build build --target minfer</pre>
<p>The data endpoints work without it: <a href="/graph?n_tokens=1">/graph?n_tokens=1</a>,
<a href="/status">/status</a>, <code>POST /generate</code>, <code>/events</code> (see viz/README.md).</p>
</body></html>
)";

void send_error(httplib::Response& res, int status, const std::string& msg) {
  res.status = status;
  res.set_content(json({{"error", msg}}).dump(), "application/json");
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// {"blk.0.attn_q.weight": {"type": "Q4_0", "shape": [128, 256], "bytes": n}} for every weight
// a node reads: the page shows the type and size of fused nodes' weights too.
json weights_json(const graph::ComputeGraph& g, const gguf::File& f) {
  json w = json::object();
  for (const graph::CNode& n : g.nodes) {
    for (const std::string& name : graph::node_weights(n.meta)) {
      if (name.empty() || w.contains(name)) continue;
      const gguf::TensorInfo* t = f.find_tensor(name);
      if (!t) continue;
      json shape = json::array();
      for (uint32_t d = 0; d < std::max<uint32_t>(t->n_dims, 1); ++d) shape.push_back(t->ne[d]);
      w[name] = {{"type", std::string(type_name(t->type))}, {"shape", shape}, {"bytes", t->nbytes}};
    }
  }
  return w;
}

}  // namespace

GenerateRequest parse_generate_request(const std::string& body, size_t max_prompt_bytes,
                                       int64_t max_predict) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception&) {
    fail("request body is not valid JSON");
  }
  if (!j.is_object()) fail("request body must be a JSON object");
  GenerateRequest r;
  auto p = j.find("prompt");
  if (p == j.end() || !p->is_string()) fail("'prompt' must be a string");
  r.prompt = p->get<std::string>();
  if (r.prompt.empty()) fail("'prompt' is empty");
  if (r.prompt.size() > max_prompt_bytes)
    fail("'prompt' is {} bytes, more than the limit of {}", r.prompt.size(), max_prompt_bytes);
  if (auto n = j.find("n_predict"); n != j.end()) {
    if (!n->is_number_integer()) fail("'n_predict' must be an integer");
    r.n_predict = n->get<int64_t>();
    if (r.n_predict < 1 || r.n_predict > max_predict)
      fail("'n_predict' = {} is outside [1, {}]", r.n_predict, max_predict);
  }
  if (auto t = j.find("temp"); t != j.end()) {
    if (!t->is_number()) fail("'temp' must be a number");
    const double v = t->get<double>();
    if (!(v >= 0 && v <= 10)) fail("'temp' = {} is outside [0, 10]", v);
    r.temp = float(v);
  }
  if (auto s = j.find("seed"); s != j.end()) {
    if (!s->is_number_unsigned()) fail("'seed' must be a non-negative integer");
    r.seed = s->get<uint64_t>();
  }
  return r;
}

VizServer::VizServer(const runtime::Model& model, VizOptions opts)
    : model_(model), opts_(std::move(opts)), http_(std::make_unique<httplib::Server>()) {
  if (!opts_.tokenize) {
    opts_.tokenize = [this](const std::string& text) {
      const auto& tok = model_.tokenizer();
      return tok.encode(text, tok.add_bos(), /*parse_special=*/true);
    };
  }
  ctx_ = std::make_unique<runtime::Context>(model_, opts_.ctx);
  setup_routes();
}

VizServer::~VizServer() {
  stop();
  wait_generation();
}

int VizServer::bind() {
  port_ = bind_http(*http_, opts_.host, opts_.port, "viz");
  return port_;
}

void VizServer::listen() { http_->listen_after_bind(); }

void VizServer::stop() {
  stopping_ = true;
  hub_.close_all();
  http_->stop();
}

std::string VizServer::url() const {
  return http_url(opts_.host, port_);
}

void VizServer::wait_generation() {
  std::lock_guard lk(gen_mu_);
  if (gen_thread_.joinable()) gen_thread_.join();
}

bool VizServer::start_generation(GenerateRequest req, std::vector<int32_t> prompt_tokens) {
  std::lock_guard lk(gen_mu_);
  if (generating_.exchange(true)) return false;
  if (gen_thread_.joinable()) gen_thread_.join();
  gen_thread_ = std::thread([this, req = std::move(req), p = std::move(prompt_tokens)]() mutable {
    try {
      generate(std::move(req), std::move(p));
    } catch (const std::exception& e) {
      hub_.publish("error", json({{"message", e.what()}}).dump());
    }
    generating_ = false;
  });
  return true;
}

void VizServer::generate(GenerateRequest req, std::vector<int32_t> prompt) {
  const tok::Tokenizer& tok = model_.tokenizer();
  const uint64_t run = ++run_id_;
  runtime::SamplerParams sp;
  sp.temp = req.temp;
  sp.seed = req.seed;
  runtime::Sampler sampler(sp);
  tok::StreamDecoder detok(tok);

  json start = {{"run", run}, {"prompt", req.prompt}, {"n_prompt", prompt.size()},
                {"n_predict", req.n_predict}};
  json ptoks = json::array();
  for (int32_t id : prompt) ptoks.push_back({{"id", id}, {"text", tok.token_to_piece(id)}});
  start["prompt_tokens"] = std::move(ptoks);
  hub_.publish("start", start.dump());

  uint64_t step = 0;
  // One decode call = one step: the graph it runs (built or reused), then one event per
  // executed node, then step_end.
  auto run_step = [&](std::span<const int32_t> toks) -> std::vector<float> {
    std::lock_guard lk(ctx_mu_);
    runtime::Context& ctx = *ctx_;
    const int64_t nt = int64_t(toks.size());
    const uint64_t built_before = ctx.stats().graphs_built;
    const uint64_t uid = ctx.graph_for(nt, 1).uid;
    const bool rebuilt = ctx.stats().graphs_built > built_before;
    hub_.publish("step", json({{"run", run},
                               {"step", step},
                               {"graph", nt == 1 ? "decode" : "prefill"},
                               {"n_tokens", nt},
                               {"n_past", ctx.n_past()},
                               {"uid", uid},
                               {"reused", !rebuilt},
                               {"graphs_built", ctx.stats().graphs_built}})
                             .dump());
    int64_t n_nodes = 0;
    ctx.set_observer([&](const graph::CNode& node, const float* data, size_t n, double ms) {
      ++n_nodes;
      if (data && n > 0) {
        const NodeStats s = compute_node_stats(data, n);
        hub_.publish("node", node_event_json(run, step, node.id, ms, &s), true);
      } else {
        hub_.publish("node", node_event_json(run, step, node.id, ms, nullptr), true);
      }
    });
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<float> logits;
    try {
      auto out = ctx.decode(toks, 1);
      logits.assign(out.begin(), out.end());
    } catch (...) {
      ctx.set_observer(nullptr);
      throw;
    }
    ctx.set_observer(nullptr);
    hub_.publish("step_end", json({{"run", run}, {"step", step}, {"n_nodes", n_nodes},
                                   {"ms", ms_since(t0)}})
                                 .dump());
    ++step;
    return logits;
  };

  {
    std::lock_guard lk(ctx_mu_);
    ctx_->truncate(0);
  }
  for (int32_t id : prompt) sampler.accept(id);
  std::vector<float> logits;
  for (size_t i = 0; i < prompt.size(); i += 512) {
    const size_t n = std::min<size_t>(512, prompt.size() - i);
    logits = run_step(std::span<const int32_t>(prompt.data() + i, n));
  }

  std::string text;
  const char* reason = "length";
  int64_t generated = 0;
  while (generated < req.n_predict && !stopping_) {
    const int32_t id = sampler.sample(logits);
    sampler.accept(id);
    ++generated;
    const bool eog = tok.is_eog(id);
    const std::string piece = eog ? std::string() : detok.push(id);
    text += piece;
    hub_.publish("token", json({{"run", run},
                                {"step", step - 1},
                                {"id", id},
                                {"piece", tok.token_to_piece(id)},
                                {"text", piece},
                                {"eog", eog}})
                              .dump());
    if (eog) {
      reason = "eog";
      break;
    }
    if (generated == req.n_predict) break;
    if (ctx_->n_past() + 1 > ctx_->n_ctx()) {
      reason = "context_full";
      break;
    }
    const int32_t one[1] = {id};
    logits = run_step(one);
  }
  if (stopping_) reason = "interrupted";
  text += detok.flush();
  hub_.publish("done", json({{"run", run}, {"reason", reason}, {"n_generated", generated},
                             {"n_steps", step}, {"text", text}})
                           .dump());
}

void VizServer::setup_routes() {
  httplib::Server& s = *http_;
  s.set_payload_max_length(opts_.max_body);

  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (host_header_allowed(opts_.host, req)) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 403, kHostRefused);
    return httplib::Server::HandlerResponse::Handled;
  });

  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    if (const Asset* a = find_asset("/index.html")) {
      res.set_content(reinterpret_cast<const char*>(a->data), a->size, std::string(a->mime));
    } else {
      res.set_content(kMissingAssetsPage, "text/html; charset=utf-8");
    }
  });
  // Static assets of the bundle (app.js, style.css, ...).
  s.Get(R"(/([A-Za-z0-9_.-]+\.(js|css|html|png|svg|map)))",
        [](const httplib::Request& req, httplib::Response& res) {
          // The whole match starts with the '/' (operator+ on a literal trips GCC 12's -Wrestrict).
          const Asset* a = find_asset(std::string(req.matches[0]));
          if (!a) return send_error(res, 404, "no such asset");
          res.set_content(reinterpret_cast<const char*>(a->data), a->size, std::string(a->mime));
        });

  s.Get("/status", [this](const httplib::Request&, httplib::Response& res) {
    const auto& hp = model_.hparams();
    json j = {{"model", model_.file().path()},
              {"arch", model_.arch()},
              {"n_layer", hp.n_layer},
              {"n_vocab", model_.n_vocab()},
              {"n_ctx", ctx_->n_ctx()},
              {"generating", generating_.load()},
              {"assets", assets_present()},
              {"max_predict", opts_.max_predict}};
    res.set_content(j.dump(), "application/json");
  });

  s.Get("/graph", [this](const httplib::Request& req, httplib::Response& res) {
    int64_t nt = 1, n_out = 1;
    try {
      if (req.has_param("n_tokens")) nt = std::stoll(req.get_param_value("n_tokens"));
      if (req.has_param("n_out")) n_out = std::stoll(req.get_param_value("n_out"));
    } catch (const std::exception&) {
      return send_error(res, 400, "n_tokens and n_out must be integers");
    }
    const int64_t max_nt = std::min<int64_t>(ctx_->n_ctx(), 4096);
    if (nt < 1 || nt > max_nt) return send_error(res, 400, fmt::format("n_tokens must be in [1, {}]", max_nt));
    if (n_out < 1 || n_out > nt) return send_error(res, 400, "n_out must be in [1, n_tokens]");
    try {
      std::lock_guard lk(ctx_mu_);
      json j = json::parse(ctx_->graph_json(nt, n_out));
      j["weights"] = weights_json(ctx_->graph_for(nt, n_out), model_.file());
      res.set_content(j.dump(), "application/json");
    } catch (const Error& e) {
      send_error(res, 400, e.what());
    }
  });

  s.Post("/generate", [this](const httplib::Request& req, httplib::Response& res) {
    GenerateRequest g;
    std::vector<int32_t> toks;
    try {
      g = parse_generate_request(req.body, opts_.max_prompt_bytes, opts_.max_predict);
      toks = opts_.tokenize(g.prompt);
    } catch (const Error& e) {
      return send_error(res, 400, e.what());
    }
    if (toks.empty()) return send_error(res, 400, "the prompt has no tokens");
    if (int64_t(toks.size()) + g.n_predict > ctx_->n_ctx())
      return send_error(res, 400, fmt::format("prompt ({} tokens) + n_predict ({}) exceed the context of {}",
                                              toks.size(), g.n_predict, ctx_->n_ctx()));
    const size_t n_prompt = toks.size();
    if (!start_generation(std::move(g), std::move(toks)))
      return send_error(res, 409, "a generation is already running");
    res.status = 202;
    res.set_content(json({{"started", true}, {"n_prompt", n_prompt}}).dump(), "application/json");
  });

  s.Get("/compare", [](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("a") || !req.has_param("b"))
      return send_error(res, 400, "compare needs a=DIR and b=DIR (MINFER_GRAPH_DUMP directories)");
    double tol = 1e-4;
    try {
      if (req.has_param("tol")) tol = std::stod(req.get_param_value("tol"));
      res.set_content(comparison_json(compare_dumps(req.get_param_value("a"), req.get_param_value("b"), tol)),
                      "application/json");
    } catch (const Error& e) {
      send_error(res, 400, e.what());
    } catch (const std::exception&) {
      send_error(res, 400, "tol must be a number");
    }
  });

  s.Get("/events", [this](const httplib::Request&, httplib::Response& res) {
    auto sub = hub_.subscribe();
    sub->push({"hello", json({{"generating", generating_.load()}}).dump(), false});
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    auto idle_ms = std::make_shared<int>(0);
    res.set_chunked_content_provider(
        "text/event-stream",
        [sub, idle_ms](size_t, httplib::DataSink& sink) {
          if (sub->closed()) {
            sink.done();
            return true;
          }
          std::string chunk = sub->wait_and_take(500);
          if (chunk.empty()) {
            // A comment line now and then finds out whether the browser is still there.
            if ((*idle_ms += 500) < 15000) return true;
            *idle_ms = 0;
            chunk = ": ping\n\n";
          } else {
            *idle_ms = 0;
          }
          return sink.write(chunk.data(), chunk.size());
        },
        [this, sub](bool) { hub_.unsubscribe(sub); });
  });

  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    send_error(res, 500, exception_message(ep));
  });
}

}  // namespace minfer::server

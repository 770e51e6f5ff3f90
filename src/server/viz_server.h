// `minfer viz`: a local web server over one loaded model.
//   GET  /                 the page (embedded viz/dist), or a page saying the bundle is missing
//   GET  /graph?n_tokens=N&n_out=M   the scheduled graph as executed (Context::graph_json:
//                          the --dump-graph-json format, viz/README.md); N = 1 is the decode graph
//   GET  /status           model and generation state
//   POST /generate         {"prompt": str, "n_predict": int, "temp"?: num, "seed"?: int}:
//                          202 and a generation on a background thread; 409 while one runs
//   GET  /events           SSE: hello, start, step, node, step_end, token, done, error, dropped
//   GET  /compare?a=DIR&b=DIR&tol=X   node diffs between two MINFER_GRAPH_DUMP directories
// Requests above the body limit get 413, malformed ones 400. The Context is used by one thread
// at a time (a mutex held per decode call), and events reach browsers only through the
// bounded queues of EventHub, so no browser can hold up a generation.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/context.h"
#include "server/sse.h"

namespace httplib {
class Server;
}
namespace minfer::runtime {
class Model;
}

namespace minfer::server {

struct VizOptions {
  std::string host = "127.0.0.1";
  int port = 8090;  // 0 = any free port
  size_t max_body = 64 * 1024;
  size_t max_prompt_bytes = 16 * 1024;
  int64_t max_predict = 2048;
  runtime::ContextParams ctx;
  // Text -> token ids (the CLI passes its prompt tokenizer: BOS handling, special tokens).
  std::function<std::vector<int32_t>(const std::string&)> tokenize;
};

struct GenerateRequest {
  std::string prompt;
  int64_t n_predict = 16;
  float temp = 0;  // greedy by default: the same prompt gives the same steps
  uint64_t seed = 0;
};

// Error (-> HTTP 400) naming the field: not JSON, not an object, prompt missing/empty/too
// long/not a string, n_predict not an integer in [1, max_predict], temp not in [0, 10],
// seed not a non-negative integer.
GenerateRequest parse_generate_request(const std::string& body, size_t max_prompt_bytes,
                                       int64_t max_predict);

class VizServer {
 public:
  VizServer(const runtime::Model& model, VizOptions opts);
  ~VizServer();
  VizServer(const VizServer&) = delete;
  VizServer& operator=(const VizServer&) = delete;

  // Binds the socket; returns the port. Error when the address cannot be bound.
  int bind();
  // Serves until stop() (from another thread or a signal handler's thread).
  void listen();
  void stop();
  std::string url() const;

  // Starts a generation (false when one is already running).
  bool start_generation(GenerateRequest req, std::vector<int32_t> prompt_tokens);
  void wait_generation();
  EventHub& hub() { return hub_; }

 private:
  void setup_routes();
  void generate(GenerateRequest req, std::vector<int32_t> prompt);

  const runtime::Model& model_;
  VizOptions opts_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  std::mutex ctx_mu_;
  std::unique_ptr<runtime::Context> ctx_;
  EventHub hub_;
  std::mutex gen_mu_;
  std::thread gen_thread_;
  std::atomic<bool> generating_{false};
  std::atomic<bool> stopping_{false};
  uint64_t run_id_ = 0;
};

}  // namespace minfer::server

#include "graph/params.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <cstring>

namespace minfer::graph {

namespace {
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "1") == 0;
}
}  // namespace

CParams CParams::from_env(CParams base) {
  if (env_on("MINFER_NO_FUSE_QKV")) base.fuse_qkv = false;
  if (env_on("MINFER_NO_FUSE_FFN")) base.fuse_ffn = false;
  return base;
}

CParams CParams::from_env() { return from_env(CParams{}); }

std::string GraphParams::to_string() const {
  return fmt::format(
      "n_tokens={} n_out={} gtype={} n_ctx={} kv_type={} fuse_qkv={} fuse_ffn={} embeddings={} "
      "backends={} weights_version={}",
      n_tokens, n_out, graph_type_name(gtype), cparams.n_ctx, type_name(cparams.kv_type),
      cparams.fuse_qkv, cparams.fuse_ffn, cparams.embeddings, fmt::join(cparams.backends, ","),
      weights_version);
}

}  // namespace minfer::graph

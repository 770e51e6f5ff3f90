#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.h"
#include "graph/cache.h"
#include "graph/mini_transformer.h"

using namespace minfer::graph;
using minfer::test::build_mini;
using minfer::test::MiniConfig;

namespace {

GraphParams params(int64_t nt) {
  GraphParams p;
  p.n_tokens = nt;
  p.n_out = 1;
  p.gtype = nt == 1 ? GraphType::Decode : GraphType::Prefill;
  p.cparams.n_ctx = 16;
  return p;
}

void expect_structural_error(const ComputeGraph& a, const ComputeGraph& b, const char* needle) {
  try {
    GraphCache::verify_structural(a, b);
    ADD_FAILURE() << "difference not detected: " << needle;
  } catch (const minfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Cache, ReuseRequiresEqualParams) {
  MiniConfig c;
  GraphCache cache;
  const GraphParams p = params(1);
  EXPECT_FALSE(cache.try_reuse(p)) << "empty cache";
  const uint64_t uid = cache.replace(build_mini(c, p).g, p).uid;
  EXPECT_NE(uid, 0u);
  EXPECT_TRUE(cache.try_reuse(p));
  EXPECT_TRUE(cache.try_reuse(p));
  EXPECT_EQ(cache.graph().uid, uid) << "a reused graph keeps its uid";

  GraphParams q = p;
  q.n_tokens = 2;
  EXPECT_FALSE(cache.try_reuse(q));
  q = p;
  q.n_out = 2;
  EXPECT_FALSE(cache.try_reuse(q));
  q = p;
  q.gtype = GraphType::Prefill;
  EXPECT_FALSE(cache.try_reuse(q));
  q = p;
  q.cparams.n_ctx = 32;
  EXPECT_FALSE(cache.try_reuse(q));
  q = p;
  q.cparams.kv_type = minfer::GgmlType::F16;
  EXPECT_FALSE(cache.try_reuse(q));
  q = p;
  q.cparams.backends = {"TEST", "CPU"};
  EXPECT_FALSE(cache.try_reuse(q));
  q = p;
  q.weights_version = 1;
  EXPECT_FALSE(cache.try_reuse(q));

  EXPECT_EQ(cache.builds(), 1u);
  EXPECT_EQ(cache.reuses(), 2u);

  const uint64_t uid2 = cache.replace(build_mini(c, params(3)).g, params(3)).uid;
  EXPECT_GT(uid2, uid) << "uids are monotonic";
  EXPECT_FALSE(cache.try_reuse(p)) << "only the last graph is kept";
  EXPECT_TRUE(cache.try_reuse(params(3)));
  EXPECT_EQ(cache.builds(), 2u);
  cache.clear();
  EXPECT_FALSE(cache.has_graph());
  EXPECT_THROW(cache.graph(), minfer::Error);
  EXPECT_EQ(cache.params(), nullptr);
}

TEST(Cache, FuseFlagsArePartOfTheReuseIdentity) {
  GraphCache cache;
  GraphParams p = params(1);
  cache.replace(build_mini(MiniConfig{}, p).g, p);
  GraphParams q = p;
  q.cparams.fuse_qkv = !p.cparams.fuse_qkv;
  EXPECT_FALSE(cache.try_reuse(q));
  q = p;
  q.cparams.fuse_ffn = !p.cparams.fuse_ffn;
  EXPECT_FALSE(cache.try_reuse(q));
  EXPECT_TRUE(cache.try_reuse(p));
}

TEST(Cache, FuseFlagsComeFromTheEnvironment) {
  ::unsetenv("MINFER_NO_FUSE_QKV");
  ::unsetenv("MINFER_NO_FUSE_FFN");
  CParams base;
  base.n_ctx = 64;
  CParams c = CParams::from_env(base);
  EXPECT_TRUE(c.fuse_qkv);
  EXPECT_TRUE(c.fuse_ffn);
  EXPECT_EQ(c.n_ctx, 64);
  ::setenv("MINFER_NO_FUSE_QKV", "1", 1);
  c = CParams::from_env(base);
  EXPECT_FALSE(c.fuse_qkv);
  EXPECT_TRUE(c.fuse_ffn);
  ::setenv("MINFER_NO_FUSE_FFN", "1", 1);
  ::setenv("MINFER_NO_FUSE_QKV", "0", 1);
  c = CParams::from_env(base);
  EXPECT_TRUE(c.fuse_qkv);
  EXPECT_FALSE(c.fuse_ffn);
  ::unsetenv("MINFER_NO_FUSE_QKV");
  ::unsetenv("MINFER_NO_FUSE_FFN");
  EXPECT_TRUE(CParams::from_env().fuse_ffn);
}

TEST(Cache, UidsAreProcessWideAndMonotonic) {
  GraphCache a, b;
  const uint64_t u1 = a.replace(ComputeGraph{}, params(1)).uid;
  const uint64_t u2 = b.replace(ComputeGraph{}, params(2)).uid;
  const uint64_t u3 = next_graph_uid();
  EXPECT_LT(u1, u2);
  EXPECT_LT(u2, u3);
}

TEST(Cache, StructuralCheckDetectsDifferentGraph) {
  MiniConfig c;
  const ComputeGraph base = build_mini(c, params(2)).g;
  EXPECT_NO_THROW(GraphCache::verify_structural(base, build_mini(c, params(2)).g));

  expect_structural_error(base, build_mini(c, params(3)).g, "shape");
  MiniConfig c3 = c;
  c3.n_layer = 3;
  expect_structural_error(base, build_mini(c3, params(2)).g, "nodes");

  ComputeGraph g = base;
  std::get<OpRmsNorm>(g.nodes[4].op).eps = 1e-5f;
  expect_structural_error(base, g, "op");
  g = base;
  g.nodes[14].src[0] = 4;  // add(3, 13) -> add(4, 13)
  expect_structural_error(base, g, "sources");
  g = base;
  g.nodes[5].dtype = DType::F16;
  expect_structural_error(base, g, "dtype");
  g = base;
  std::get<MatMulMeta>(g.nodes[5].meta).bias = "";
  expect_structural_error(base, g, "meta");
  g = base;
  g.outputs.push_back(5);
  expect_structural_error(base, g, "outputs");
  MiniConfig cn = c;
  cn.rope = RopeStyle::Normal;
  expect_structural_error(base, build_mini(cn, params(2)).g, "RoPE");

  // Labels, backends and uids are not structure.
  g = base;
  g.nodes[4].name = "renamed";
  g.nodes[4].backend = 1;
  g.uid = 99;
  EXPECT_NO_THROW(GraphCache::verify_structural(base, g));
}

#include "chat/ast.h"

namespace minfer::chat {
namespace {

bool expr_mentions(const Expr* e, const std::string& name) {
  if (!e) return false;
  if (e->kind == Expr::Name && e->name == name) return true;
  for (const auto& a : e->args)
    if (expr_mentions(a.get(), name)) return true;
  for (const auto& [k, v] : e->kwargs)
    if (expr_mentions(v.get(), name)) return true;
  return false;
}

}  // namespace

bool mentions(const Body& body, const std::string& name) {
  for (const auto& st : body) {
    if (expr_mentions(st->expr.get(), name) || expr_mentions(st->cond.get(), name) ||
        expr_mentions(st->filter.get(), name) || mentions(st->body, name) || mentions(st->else_body, name))
      return true;
    for (const auto& [cond, b] : st->branches)
      if (expr_mentions(cond.get(), name) || mentions(b, name)) return true;
    for (const Param& p : st->params)
      if (expr_mentions(p.default_value.get(), name)) return true;
  }
  return false;
}

}  // namespace minfer::chat

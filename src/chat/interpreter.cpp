#include "chat/interpreter.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/eval_error.h"
#include "chat/render_budget.h"
#include "chat/template_error.h"

namespace minfer::chat {
namespace {

// Variables: `for` bodies and macro calls get their own scope, `if` does not (as in Jinja2).
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { Normal, Break, Continue };

// Bound recursion (nested expressions, recursive macros) so that hostile templates get an
// error instead of a stack overflow. A macro call nests a dozen C++ frames (body, statements,
// expressions), so macro recursion has its own, lower bound.
constexpr int kMaxDepth = 500;
constexpr int kMaxCallDepth = 100;

class Interp {
 public:
  explicit Interp(const Value& vars) : root_(std::make_shared<Scope>()) {
    if (vars.is_dict())
      for (const auto& [k, v] : vars.dict->items) root_->vars[k] = v;
  }

  // Namespaces are the only mutable containers, so every reference cycle (`ns.me = ns`, a
  // caller() kept in a namespace) runs through one: emptying them frees everything.
  ~Interp() {
    for (auto& d : namespaces_) d->items.clear();
  }

  std::string run(const Program& p) {
    RenderBudget budget;
    std::string out;
    exec(p.body, root_, out);
    return out;
  }

 private:
  ScopePtr root_;
  int depth_ = 0;
  int calls_ = 0;  // macro and caller() bodies being rendered
  std::vector<std::shared_ptr<Dict>> namespaces_;  // assigned to during this render

  static Value lookup(const ScopePtr& scope, const std::string& name) {
    for (Scope* s = scope.get(); s; s = s->parent.get()) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return it->second;
    }
    if (const Value* g = global_functions().find(name)) return *g;
    return Value::undefined("'" + name + "' is undefined");
  }

  Flow exec(const Body& body, const ScopePtr& scope, std::string& out) {
    for (const auto& st : body) {
      const Flow f = exec_one(*st, scope, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Flow exec_one(const Stmt& st, const ScopePtr& scope, std::string& out) {
    try {
      return exec_stmt(st, scope, out);
    } catch (const EvalError& e) {
      throw TemplateError(st.line, e.what(), e.raised);
    }
  }

  // Text appended to a render's output (itself a string, under the same bounds).
  static void emit(std::string& out, const std::string& text) {
    check_string_size(out.size() + text.size());
    charge_bytes(text.size());
    out += text;
  }

  Flow exec_stmt(const Stmt& st, const ScopePtr& scope, std::string& out) {
    charge_step();
    switch (st.kind) {
      case Stmt::Text: emit(out, st.text); return Flow::Normal;
      case Stmt::Output: emit(out, to_str(eval(*st.expr, scope))); return Flow::Normal;
      case Stmt::If:
        for (const auto& [cond, body] : st.branches)
          if (truthy(eval(*cond, scope))) return exec(body, scope, out);
        return exec(st.else_body, scope, out);
      case Stmt::For: return exec_for(st, scope, out);
      case Stmt::Set: {
        Value v = eval(*st.expr, scope);
        if (!st.attr.empty()) {
          Value ns = lookup(scope, st.targets[0]);
          if (ns.kind != Value::Namespace)
            eval_fail("cannot assign attribute '" + st.attr + "' on " +
                      (ns.is_undefined() ? "undefined '" + st.targets[0] + "'"
                                         : "non-namespace object '" + st.targets[0] + "'"));
          ns.dict->set(st.attr, std::move(v));
          if (std::find(namespaces_.begin(), namespaces_.end(), ns.dict) == namespaces_.end())
            namespaces_.push_back(ns.dict);
        } else {
          assign(st.targets, std::move(v), *scope);
        }
        return Flow::Normal;
      }
      case Stmt::SetBlock: {
        std::string text = render_body(st.body, scope);
        Value v = Value::str(std::move(text));
        if (st.filter) v = apply_filters(*st.filter, std::move(v), scope);
        scope->vars[st.targets[0]] = std::move(v);
        return Flow::Normal;
      }
      case Stmt::Macro: scope->vars[st.name] = make_macro(st, scope); return Flow::Normal;
      case Stmt::CallBlock: {
        // caller() renders the block body in a scope that sees the caller's params.
        const Stmt* self = &st;
        Value caller = Value::function("caller", [this, self, scope](const CallArgs& a) {
          auto s = std::make_shared<Scope>();
          s->parent = scope;
          bind_params(self->params, a, s);
          return Value::str(render_call(self->body, s));
        });
        const Expr& call = *st.expr;
        Value callee = eval(*call.args[0], scope);
        CallArgs a = eval_args(call, scope);
        a.kw.emplace_back("caller", std::move(caller));
        emit(out, to_str(invoke(callee, a, call)));
        return Flow::Normal;
      }
      case Stmt::FilterBlock:
        emit(out, to_str(apply_filters(*st.filter, Value::str(render_body(st.body, scope)), scope)));
        return Flow::Normal;
      case Stmt::Group: return exec(st.body, scope, out);
      case Stmt::Break: return Flow::Break;
      case Stmt::Continue: return Flow::Continue;
      case Stmt::Do: eval(*st.expr, scope); return Flow::Normal;
      case Stmt::With: {
        // The values come from the enclosing scope, all of them, before any is bound.
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        for (const Param& p : st.params) inner->vars[p.name] = eval(*p.default_value, scope);
        return exec(st.body, inner, out);
      }
    }
    return Flow::Normal;
  }

  std::string render_body(const Body& body, const ScopePtr& scope) {
    std::string out;
    exec(body, scope, out);
    return out;
  }

  // Runs f one level deeper in macro, caller() or recursive-loop calls.
  template <typename F>
  std::string deeper(const char* what, F&& f) {
    if (calls_ >= kMaxCallDepth) eval_fail(std::string(what) + " nested too deeply (more than " + std::to_string(kMaxCallDepth) + ")");
    ++calls_;
    struct Guard {
      int& d;
      ~Guard() { --d; }
    } guard{calls_};
    return f();
  }

  // A macro's or caller()'s body.
  std::string render_call(const Body& body, const ScopePtr& scope) {
    return deeper("macro calls", [&] { return render_body(body, scope); });
  }

  static void assign(const std::vector<std::string>& targets, Value v, Scope& scope) {
    if (targets.size() == 1) {
      scope.vars[targets[0]] = std::move(v);
      return;
    }
    List items = iterate(v);
    if (items.size() != targets.size())
      eval_fail("cannot unpack " + std::to_string(items.size()) + " values into " +
                std::to_string(targets.size()) + " names");
    for (size_t i = 0; i < targets.size(); ++i) scope.vars[targets[i]] = std::move(items[i]);
  }

  Flow exec_for(const Stmt& st, const ScopePtr& scope, std::string& out) {
    return loop_over(st, eval(*st.expr, scope), scope, out, 1);  // Undefined iterates as empty
  }

  // One level of a for loop over `seq`; a recursive loop's `loop(items)` runs the next level
  // (depth + 1) into the string it returns. The flow is the else block's, which belongs to the
  // enclosing loop.
  Flow loop_over(const Stmt& st, const Value& seq, const ScopePtr& scope, std::string& out, int64_t depth) {
    List items = iterate(seq);
    if (st.cond) {
      auto cond_scope = std::make_shared<Scope>();
      cond_scope->parent = scope;
      List kept;
      for (auto& x : items) {
        assign(st.targets, x, *cond_scope);
        if (truthy(eval(*st.cond, cond_scope))) kept.push_back(std::move(x));
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec(st.else_body, scope, out);
    const int64_t n = int64_t(items.size());
    Value loop = Value::make_dict();
    Dict& L = *loop.dict;
    L.set("length", Value::integer(n));
    L.set("depth", Value::integer(depth));
    L.set("depth0", Value::integer(depth - 1));
    auto index_cell = std::make_shared<int64_t>(0);
    L.set("cycle", Value::function("cycle", [index_cell](const CallArgs& a) {
      if (a.pos.empty()) eval_fail("no items for cycling given");
      return a.pos[size_t(*index_cell % int64_t(a.pos.size()))];
    }));
    // loop.changed(*values): true on the first call and whenever the values differ from the
    // previous call's.
    auto last = std::make_shared<std::optional<List>>();
    // The values kept may hold the loop itself (`loop.changed(loop)`): dropped when the loop ends.
    struct Forget {
      std::shared_ptr<std::optional<List>> cell;
      ~Forget() { cell->reset(); }
    } forget{last};
    L.set("changed", Value::function("changed", [last](const CallArgs& a) {
      if (*last && last->value().size() == a.pos.size() &&
          std::equal(a.pos.begin(), a.pos.end(), last->value().begin(), [](const Value& x, const Value& y) { return equals(x, y); }))
        return Value::boolean(false);
      *last = a.pos;
      return Value::boolean(true);
    }));
    if (st.recursive) {
      const Stmt* self = &st;
      std::weak_ptr<Scope> weak = scope;
      loop.fn = std::make_shared<Callable>(Callable{"loop", [this, self, weak, depth](const CallArgs& a) {
        if (a.pos.size() != 1) eval_fail("loop() takes exactly one argument, the items of the next level");
        return Value::str(deeper("recursive loops", [&] {
          const ScopePtr outer = weak.lock();
          if (!outer) eval_fail("loop() called after its loop ended");
          std::string inner;
          loop_over(*self, a.pos[0], outer, inner, depth + 1);
          return inner;
        }));
      }});
    }
    for (int64_t i = 0; i < n; ++i) {
      charge_steps(4);  // an iteration, even of an empty body: a scope and the loop variables
      *index_cell = i;
      L.set("index", Value::integer(i + 1));
      L.set("index0", Value::integer(i));
      L.set("revindex", Value::integer(n - i));
      L.set("revindex0", Value::integer(n - i - 1));
      L.set("first", Value::boolean(i == 0));
      L.set("last", Value::boolean(i == n - 1));
      L.set("previtem", i > 0 ? items[size_t(i - 1)] : Value::undefined("there is no previous item"));
      L.set("nextitem", i + 1 < n ? items[size_t(i + 1)] : Value::undefined("there is no next item"));
      // As in Jinja2, assignments in the body last for one iteration only.
      auto body_scope = std::make_shared<Scope>();
      body_scope->parent = scope;
      body_scope->vars["loop"] = loop;
      assign(st.targets, items[size_t(i)], *body_scope);
      const Flow f = exec(st.body, body_scope, out);
      if (f == Flow::Break) break;
    }
    return Flow::Normal;
  }

  void bind_params(const std::vector<Param>& params, const CallArgs& a, const ScopePtr& s) {
    for (size_t i = 0; i < params.size(); ++i) {
      const Param& p = params[i];
      if (i < a.pos.size()) {
        s->vars[p.name] = a.pos[i];
      } else if (const Value* kv = a.kwarg(p.name)) {
        s->vars[p.name] = *kv;
      } else if (p.default_value) {
        s->vars[p.name] = eval(*p.default_value, s);
      } else {
        s->vars[p.name] = Value::undefined("parameter '" + p.name + "' was not provided");
      }
    }
    // Extra arguments are reachable as varargs/kwargs, as in Jinja2 macros.
    List varargs;
    for (size_t i = params.size(); i < a.pos.size(); ++i) varargs.push_back(a.pos[i]);
    Value kwargs = Value::make_dict();
    for (const auto& [k, v] : a.kw) {
      bool known = k == "caller";
      for (const auto& p : params) known = known || p.name == k;
      if (!known) kwargs.dict->set(k, v);
    }
    s->vars["varargs"] = Value::make_tuple(std::move(varargs));
    s->vars["kwargs"] = std::move(kwargs);
    if (const Value* c = a.kwarg("caller")) s->vars["caller"] = *c;
  }

  Value make_macro(const Stmt& st, const ScopePtr& scope) {
    const Stmt* self = &st;
    // The macro sees the scope it was defined in (and later assignments there).
    std::weak_ptr<Scope> weak = scope;
    return Value::function(st.name, [this, self, weak](const CallArgs& a) {
      // Jinja2's checks: extra arguments only where the body reads varargs / kwargs.
      if (!self->catch_varargs && a.pos.size() > self->params.size())
        eval_fail("macro '" + self->name + "' takes not more than " + std::to_string(self->params.size()) + " argument(s)");
      for (const auto& [k, v] : a.kw) {
        bool known = k == "caller" || self->catch_kwargs;
        for (size_t i = 0; i < self->params.size() && !known; ++i) {
          if (self->params[i].name != k) continue;
          if (i < a.pos.size()) eval_fail("macro '" + self->name + "' got multiple values for argument '" + k + "'");
          known = true;
        }
        if (!known) eval_fail("macro '" + self->name + "' takes no keyword argument '" + k + "'");
      }
      auto s = std::make_shared<Scope>();
      s->parent = weak.lock();
      bind_params(self->params, a, s);
      return Value::str(render_call(self->body, s));
    });
  }

  CallArgs eval_args(const Expr& e, const ScopePtr& scope) {
    CallArgs a;
    for (size_t i = 1; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i], scope));
    for (const auto& [k, v] : e.kwargs) a.kw.emplace_back(k, eval(*v, scope));
    return a;
  }

  Value invoke(const Value& callee, const CallArgs& a, const Expr& call) {
    if (callee.is_undefined()) undefined_error(callee);
    // A recursive loop's `loop` is a dict of its variables that is also callable.
    if (callee.kind != Value::Fn && !(callee.kind == Value::DictK && callee.fn))
      eval_fail("'" + type_name(callee) + "' object is not callable");
    return callee.fn->fn(a);
  }

  Value apply_filters(const Expr& f, Value input, const ScopePtr& scope) {
    // A filter block's chain has a null innermost input: feed `input` there.
    if (f.args[0]) input = apply_filters(*f.args[0], std::move(input), scope);
    return call_filter(f, input, scope);
  }

  Value call_filter(const Expr& f, const Value& input, const ScopePtr& scope) {
    const FilterFn fn = find_filter(f.name);
    if (!fn) eval_fail("no filter named '" + f.name + "'");
    return fn(input, eval_args(f, scope));
  }

  // Every value an expression yields is a copy: a string's bytes count against the budget.
  Value eval(const Expr& e, const ScopePtr& scope) {
    charge_step();
    Value v = eval_expr(e, scope);
    if (v.is_string()) charge_bytes(v.s.size());
    return v;
  }

  Value eval_expr(const Expr& e, const ScopePtr& scope) {
    if (++depth_ > kMaxDepth) {
      --depth_;
      eval_fail("expressions or macro calls nested too deeply");
    }
    struct Guard {
      int& d;
      ~Guard() { --d; }
    } guard{depth_};
    switch (e.kind) {
      case Expr::Literal: return e.literal;
      case Expr::Name: return lookup(scope, e.name);
      case Expr::ListLit:
      case Expr::TupleLit: {
        List items;
        for (const auto& x : e.args) items.push_back(eval(*x, scope));
        return e.kind == Expr::TupleLit ? Value::make_tuple(std::move(items))
                                        : Value::make_list(std::move(items));
      }
      case Expr::DictLit: {
        Value d = Value::make_dict();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const std::string k = dict_key(eval(*e.args[i], scope));
          d.dict->set(k, eval(*e.args[i + 1], scope));
        }
        return d;
      }
      case Expr::GetAttr: return get_attr(eval(*e.args[0], scope), e.name);
      case Expr::GetItem: return get_item(eval(*e.args[0], scope), eval(*e.args[1], scope));
      case Expr::Slice: {
        Value parts[3];
        for (int k = 0; k < 3; ++k)
          if (e.args[size_t(k) + 1]) parts[k] = eval(*e.args[size_t(k) + 1], scope);
        return slice(eval(*e.args[0], scope), parts[0], parts[1], parts[2]);
      }
      case Expr::Call: {
        Value callee = eval(*e.args[0], scope);
        return invoke(callee, eval_args(e, scope), e);
      }
      case Expr::Filter: return call_filter(e, eval(*e.args[0], scope), scope);
      case Expr::Test: {
        const TestFn fn = find_test(e.name);
        if (!fn) eval_fail("no test named '" + e.name + "'");
        const bool r = fn(eval(*e.args[0], scope), eval_args(e, scope));
        return Value::boolean(r != e.negated);
      }
      case Expr::Unary: {
        Value v = eval(*e.args[0], scope);
        if (e.name == "not") return Value::boolean(!truthy(v));
        if (e.name == "-") return negate(v);
        if (!v.is_numeric()) eval_fail("bad operand type for unary +: '" + type_name(v) + "'");
        return v;
      }
      case Expr::Binary: {
        Value l = eval(*e.args[0], scope);
        if (e.name == "and") return truthy(l) ? eval(*e.args[1], scope) : l;
        if (e.name == "or") return truthy(l) ? l : eval(*e.args[1], scope);
        return binary_op(e.name, l, eval(*e.args[1], scope));
      }
      case Expr::Compare: {
        Value left = eval(*e.args[0], scope);
        for (size_t k = 0; k < e.ops.size(); ++k) {
          Value right = eval(*e.args[k + 1], scope);
          if (!truthy(binary_op(e.ops[k], left, right))) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case Expr::Cond:
        if (truthy(eval(*e.args[1], scope))) return eval(*e.args[0], scope);
        return e.args[2] ? eval(*e.args[2], scope) : Value::undefined("conditional expression had no else");
    }
    return Value::undefined();
  }
};

}  // namespace

std::string execute(const Program& program, const Value& vars) {
  return Interp(vars).run(program);
}

}  // namespace minfer::chat

#include "chat/parser.h"

#include <initializer_list>

namespace minfer::chat {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> t) : t_(std::move(t)) {}

  std::unique_ptr<Program> run() {
    auto prog = std::make_unique<Program>();
    std::string end;
    prog->body = body({}, end);
    return prog;
  }

 private:
  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;

  // Nesting guard: hostile input gets an error instead of a stack overflow.
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.depth_ > 200) p.error("template nested too deeply");
    }
    ~Nest() { --p.depth_; }
  };

  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::Text: return "text";
      case Tok::VarBegin: return "'{{'";
      case Tok::VarEnd: return "'}}'";
      case Tok::BlockBegin: return "'{%'";
      case Tok::BlockEnd: return "'%}'";
      case Tok::Name: return "'" + t.text + "'";
      case Tok::String: return "string literal";
      case Tok::Int:
      case Tok::Float: return "number";
      case Tok::Op: return "'" + t.text + "'";
      case Tok::Eof: return "end of template";
    }
    return "?";
  }

  [[noreturn]] void error(const std::string& msg) { throw TemplateError(cur().line, msg); }
  [[noreturn]] void unexpected(const std::string& expected) {
    error("unexpected " + describe(cur()) + ", expected " + expected);
  }

  bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) unexpected(std::string("'") + op + "'");
  }
  void expect_block_end() {
    if (cur().type != Tok::BlockEnd) unexpected("'%}'");
    next();
  }
  std::string expect_name() {
    if (cur().type != Tok::Name) unexpected("a name");
    std::string n = cur().text;
    next();
    return n;
  }

  // ---- statements ----

  // Parses until a block tag whose name is in `ends` (returned in `end`, the tag's name
  // consumed but not its arguments or '%}').
  Body body(std::initializer_list<const char*> ends, std::string& end) {
    Body out;
    while (true) {
      const Token& tk = cur();
      if (tk.type == Tok::Eof) {
        if (ends.size() == 0) return out;
        std::string want;
        for (const char* e : ends) want += std::string(want.empty() ? "" : " or ") + "'" + e + "'";
        error("unexpected end of template, expected " + want);
      }
      if (tk.type == Tok::Text) {
        auto s = std::make_unique<Stmt>(Stmt::Text, tk.line);
        s->text = tk.text;
        out.push_back(std::move(s));
        next();
      } else if (tk.type == Tok::VarBegin) {
        auto s = std::make_unique<Stmt>(Stmt::Output, tk.line);
        next();
        s->expr = tuple(true);
        if (cur().type != Tok::VarEnd) unexpected("'}}'");
        next();
        out.push_back(std::move(s));
      } else if (tk.type == Tok::BlockBegin) {
        next();
        if (cur().type != Tok::Name) unexpected("a statement name");
        for (const char* e : ends)
          if (cur().text == e) {
            end = e;
            next();
            return out;
          }
        out.push_back(statement());
      } else {
        unexpected("text, '{{' or '{%'");
      }
    }
  }

  StmtPtr statement() {
    Nest nest(*this);
    const std::string kw = cur().text;
    const int line = cur().line;
    next();
    if (kw == "if") return if_stmt(line);
    if (kw == "for") return for_stmt(line);
    if (kw == "set") return set_stmt(line);
    if (kw == "macro") return macro_stmt(line);
    if (kw == "call") return call_stmt(line);
    if (kw == "filter") {
      auto s = std::make_unique<Stmt>(Stmt::FilterBlock, line);
      s->filter = filter_chain(nullptr);
      expect_block_end();
      std::string end;
      s->body = body({"endfilter"}, end);
      expect_block_end();
      return s;
    }
    if (kw == "break" || kw == "continue") {
      expect_block_end();
      return std::make_unique<Stmt>(kw == "break" ? Stmt::Break : Stmt::Continue, line);
    }
    if (kw == "do") {
      auto s = std::make_unique<Stmt>(Stmt::Do, line);
      s->expr = tuple(true);
      expect_block_end();
      return s;
    }
    if (kw == "with") {
      auto s = std::make_unique<Stmt>(Stmt::With, line);
      while (cur().type != Tok::BlockEnd) {
        if (!s->params.empty()) expect_op(",");
        Param p;
        p.name = expect_name();
        expect_op("=");
        p.default_value = expression(true);
        s->params.push_back(std::move(p));
      }
      expect_block_end();
      std::string end;
      s->body = body({"endwith"}, end);
      expect_block_end();
      return s;
    }
    if (kw == "generation") {
      // transformers' AssistantTracker marks assistant text; for rendering it is transparent.
      auto s = std::make_unique<Stmt>(Stmt::Group, line);
      expect_block_end();
      std::string end;
      s->body = body({"endgeneration"}, end);
      expect_block_end();
      return s;
    }
    i_ -= 1;
    error("unknown or misplaced statement '" + kw + "'");
  }

  StmtPtr if_stmt(int line) {
    auto s = std::make_unique<Stmt>(Stmt::If, line);
    while (true) {
      ExprPtr cond = expression(true);
      expect_block_end();
      std::string end;
      Body b = body({"elif", "else", "endif"}, end);
      s->branches.emplace_back(std::move(cond), std::move(b));
      if (end == "elif") continue;
      if (end == "else") {
        expect_block_end();
        s->else_body = body({"endif"}, end);
      }
      expect_block_end();
      return s;
    }
  }

  std::vector<std::string> targets() {
    std::vector<std::string> names;
    const bool paren = skip_op("(");
    do {
      names.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr for_stmt(int line) {
    auto s = std::make_unique<Stmt>(Stmt::For, line);
    s->targets = targets();
    if (!skip_name("in")) unexpected("'in'");
    s->expr = tuple(false);
    if (skip_name("if")) s->cond = expression(true);
    s->recursive = skip_name("recursive");
    expect_block_end();
    std::string end;
    s->body = body({"else", "endfor"}, end);
    if (end == "else") {
      expect_block_end();
      s->else_body = body({"endfor"}, end);
    }
    expect_block_end();
    return s;
  }

  StmtPtr set_stmt(int line) {
    std::vector<std::string> names;
    std::string attr;
    names.push_back(expect_name());
    if (skip_op(".")) {
      attr = expect_name();
    } else {
      while (skip_op(",")) names.push_back(expect_name());
    }
    if (skip_op("=")) {
      auto s = std::make_unique<Stmt>(Stmt::Set, line);
      s->targets = std::move(names);
      s->attr = std::move(attr);
      s->expr = tuple(true);
      expect_block_end();
      return s;
    }
    if (names.size() != 1 || !attr.empty()) unexpected("'='");
    auto s = std::make_unique<Stmt>(Stmt::SetBlock, line);
    s->targets = std::move(names);
    if (is_op("|")) s->filter = filters(nullptr);
    expect_block_end();
    std::string end;
    s->body = body({"endset"}, end);
    expect_block_end();
    return s;
  }

  std::vector<Param> params() {
    std::vector<Param> ps;
    expect_op("(");
    while (!skip_op(")")) {
      if (!ps.empty()) expect_op(",");
      if (skip_op(")")) break;
      Param p;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = expression(true);
      ps.push_back(std::move(p));
    }
    return ps;
  }

  StmtPtr macro_stmt(int line) {
    auto s = std::make_unique<Stmt>(Stmt::Macro, line);
    s->name = expect_name();
    s->params = params();
    expect_block_end();
    std::string end;
    s->body = body({"endmacro"}, end);
    s->catch_varargs = mentions(s->body, "varargs");
    s->catch_kwargs = mentions(s->body, "kwargs");
    if (cur().type == Tok::Name) next();  // {% endmacro name %}
    expect_block_end();
    return s;
  }

  StmtPtr call_stmt(int line) {
    auto s = std::make_unique<Stmt>(Stmt::CallBlock, line);
    if (is_op("(")) s->params = params();
    s->expr = expression(true);
    if (s->expr->kind != Expr::Call) error("expected a macro call after 'call'");
    expect_block_end();
    std::string end;
    s->body = body({"endcall"}, end);
    expect_block_end();
    return s;
  }

  // ---- expressions ----

  ExprPtr make(Expr::Kind k, int line) { return std::make_unique<Expr>(k, line); }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    auto e = make(Expr::Binary, line);
    e->name = op;
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return e;
  }

  // Comma-separated expressions make a tuple (`{% set a = 1, 2 %}`, `for x in a, b`).
  ExprPtr tuple(bool with_condexpr) {
    const int line = cur().line;
    ExprPtr first = expression(with_condexpr);
    if (!is_op(",")) return first;
    auto t = make(Expr::TupleLit, line);
    t->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (cur().type == Tok::BlockEnd || cur().type == Tok::VarEnd || is_op(")")) break;
      t->args.push_back(expression(with_condexpr));
    }
    return t;
  }

  ExprPtr expression(bool with_condexpr) {
    Nest nest(*this);
    return with_condexpr ? condexpr() : or_expr();
  }

  ExprPtr condexpr() {
    ExprPtr e = or_expr();
    while (is_name("if")) {
      const int line = cur().line;
      next();
      auto c = make(Expr::Cond, line);
      c->args.push_back(std::move(e));
      c->args.push_back(or_expr());
      c->args.push_back(skip_name("else") ? condexpr() : nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (is_name("or")) {
      const int line = cur().line;
      next();
      e = binary("or", std::move(e), and_expr(), line);
    }
    return e;
  }

  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (is_name("and")) {
      const int line = cur().line;
      next();
      e = binary("and", std::move(e), not_expr(), line);
    }
    return e;
  }

  ExprPtr not_expr() {
    Nest nest(*this);
    if (is_name("not")) {
      auto e = make(Expr::Unary, cur().line);
      next();
      e->name = "not";
      e->args.push_back(not_expr());
      return e;
    }
    return compare();
  }

  ExprPtr compare() {
    const int line = cur().line;
    ExprPtr first = math1();
    ExprPtr chain;
    while (true) {
      std::string op;
      if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                    cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!chain) {
        chain = make(Expr::Compare, line);
        chain->args.push_back(std::move(first));
      }
      chain->ops.push_back(op);
      chain->args.push_back(math1());
    }
    if (!chain) return first;
    if (chain->ops.size() == 1) {  // the common case: a plain binary node
      chain->kind = Expr::Binary;
      chain->name = chain->ops[0];
      chain->ops.clear();
    }
    return chain;
  }

  ExprPtr math1() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = cur().text;
      const int line = cur().line;
      next();
      e = binary(op, std::move(e), concat(), line);
    }
    return e;
  }

  ExprPtr concat() {
    ExprPtr e = math2();
    while (is_op("~")) {
      const int line = cur().line;
      next();
      e = binary("~", std::move(e), math2(), line);
    }
    return e;
  }

  ExprPtr math2() {
    ExprPtr e = pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = cur().text;
      const int line = cur().line;
      next();
      e = binary(op, std::move(e), pow(), line);
    }
    return e;
  }

  ExprPtr pow() {
    ExprPtr e = unary(true);
    while (is_op("**")) {
      const int line = cur().line;
      next();
      e = binary("**", std::move(e), unary(true), line);
    }
    return e;
  }

  ExprPtr unary(bool with_filter) {
    Nest nest(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      auto u = make(Expr::Unary, cur().line);
      u->name = cur().text;
      next();
      u->args.push_back(unary(false));
      e = std::move(u);
    } else {
      e = primary();
    }
    e = postfix(std::move(e));
    if (with_filter) e = filter_expr(std::move(e));
    return e;
  }

  ExprPtr primary() {
    const Token& tk = cur();
    const int line = tk.line;
    if (tk.type == Tok::Name) {
      auto e = make(Expr::Literal, line);
      const std::string& n = tk.text;
      if (n == "true" || n == "True") e->literal = Value::boolean(true);
      else if (n == "false" || n == "False") e->literal = Value::boolean(false);
      else if (n == "none" || n == "None") e->literal = Value::none();
      else {
        e->kind = Expr::Name;
        e->name = n;
      }
      next();
      return e;
    }
    if (tk.type == Tok::String) {
      std::string s;
      while (cur().type == Tok::String) {
        s += cur().text;
        next();
      }
      auto e = make(Expr::Literal, line);
      e->literal = Value::str(std::move(s));
      return e;
    }
    if (tk.type == Tok::Int || tk.type == Tok::Float) {
      auto e = make(Expr::Literal, line);
      e->literal = tk.type == Tok::Int ? Value::integer(tk.ival) : Value::number(tk.fval);
      next();
      return e;
    }
    if (skip_op("(")) {
      if (skip_op(")")) return make(Expr::TupleLit, line);
      ExprPtr first = expression(true);
      if (skip_op(")")) return first;
      auto t = make(Expr::TupleLit, line);
      t->args.push_back(std::move(first));
      while (skip_op(",")) {
        if (is_op(")")) break;
        t->args.push_back(expression(true));
      }
      expect_op(")");
      return t;
    }
    if (skip_op("[")) {
      auto l = make(Expr::ListLit, line);
      while (!skip_op("]")) {
        if (!l->args.empty()) expect_op(",");
        if (skip_op("]")) break;
        l->args.push_back(expression(true));
      }
      return l;
    }
    if (skip_op("{")) {
      auto d = make(Expr::DictLit, line);
      while (!skip_op("}")) {
        if (!d->args.empty()) expect_op(",");
        if (skip_op("}")) break;
        d->args.push_back(expression(true));
        expect_op(":");
        d->args.push_back(expression(true));
      }
      return d;
    }
    unexpected("an expression");
  }

  ExprPtr postfix(ExprPtr e) {
    while (true) {
      const int line = cur().line;
      if (skip_op(".")) {
        if (cur().type == Tok::Int) {
          auto g = make(Expr::GetItem, line);
          auto idx = make(Expr::Literal, line);
          idx->literal = Value::integer(cur().ival);
          next();
          g->args.push_back(std::move(e));
          g->args.push_back(std::move(idx));
          e = std::move(g);
        } else {
          auto g = make(Expr::GetAttr, line);
          g->name = expect_name();
          g->args.push_back(std::move(e));
          e = std::move(g);
        }
      } else if (skip_op("[")) {
        e = subscript(std::move(e), line);
      } else if (is_op("(")) {
        e = call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    int n = 0;
    bool is_slice = false;
    while (true) {
      if (is_op(":")) {
        is_slice = true;
        next();
        if (++n > 2) unexpected("']'");
        continue;
      }
      if (is_op("]")) break;
      if (parts[n]) unexpected("':' or ']'");
      parts[n] = expression(true);
    }
    next();
    if (!is_slice) {
      if (!parts[0]) error("empty subscript");
      auto g = make(Expr::GetItem, line);
      g->args.push_back(std::move(obj));
      g->args.push_back(std::move(parts[0]));
      return g;
    }
    auto s = make(Expr::Slice, line);
    s->args.push_back(std::move(obj));
    for (auto& p : parts) s->args.push_back(std::move(p));
    return s;
  }

  void call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!skip_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (skip_op(")")) break;
      if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
        std::string k = cur().text;
        next();
        next();
        e.kwargs.emplace_back(std::move(k), expression(true));
      } else {
        if (!e.kwargs.empty()) error("positional argument follows keyword argument");
        e.args.push_back(expression(true));
      }
    }
  }

  ExprPtr call(ExprPtr callee) {
    auto c = make(Expr::Call, cur().line);
    c->args.push_back(std::move(callee));
    call_args(*c);
    return c;
  }

  std::string dotted_name() {
    std::string n = expect_name();
    while (is_op(".") && peek().type == Tok::Name) {
      next();
      n += "." + expect_name();
    }
    return n;
  }

  ExprPtr one_filter(ExprPtr input) {
    auto f = make(Expr::Filter, cur().line);
    f->name = dotted_name();
    f->args.push_back(std::move(input));
    if (is_op("(")) call_args(*f);
    return f;
  }

  // `| f | g(x)` applied to `input` (null in set blocks).
  ExprPtr filters(ExprPtr input) {
    while (skip_op("|")) input = one_filter(std::move(input));
    return input;
  }

  // `f | g(x)` of a filter block (no leading '|'); the innermost input is null.
  ExprPtr filter_chain(ExprPtr input) { return filters(one_filter(std::move(input))); }

  ExprPtr filter_expr(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        e = filters(std::move(e));
      } else if (is_name("is")) {
        auto t = make(Expr::Test, cur().line);
        next();
        t->negated = skip_name("not");
        t->name = dotted_name();
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          call_args(*t);
        } else if ((cur().type == Tok::Name || cur().type == Tok::String || cur().type == Tok::Int ||
                    cur().type == Tok::Float || is_op("(") || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          if (is_name("is")) error("cannot chain multiple tests with 'is'");
          t->args.push_back(postfix(primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = call(std::move(e));
      } else {
        return e;
      }
    }
  }
};

}  // namespace

std::unique_ptr<Program> parse(std::vector<Token> tokens) {
  return Parser(std::move(tokens)).run();
}

}  // namespace minfer::chat

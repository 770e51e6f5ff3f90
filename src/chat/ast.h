// The parsed template. Nodes are "fat" (one struct per category, fields used per kind) to
// keep the parser and the evaluator short; the comment on each kind says which fields it uses.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace minfer::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum Kind {
    Literal,  // literal
    Name,     // name
    ListLit,  // args: items
    TupleLit, // args: items
    DictLit,  // args: key0, value0, key1, value1, ...
    GetAttr,  // args[0] . name
    GetItem,  // args[0] [ args[1] ]
    Slice,    // args[0] [ args[1] : args[2] : args[3] ]  (each may be null)
    Call,     // args[0] ( args[1..], kwargs )
    Filter,   // args[0] | name ( args[1..], kwargs ); args[0] null in filter blocks
    Test,     // args[0] is [not: negated] name ( args[1..] )
    Unary,    // name (not, -, +) args[0]
    Binary,   // args[0] name args[1]; name in + - * / // % ** ~ and or == != < > <= >= in notin
    Compare,  // chained: args[0] ops[0] args[1] ops[1] args[2] ... (each operand evaluated once)
    Cond,     // args[0] if args[1] else args[2] (may be null)
  };
  Kind kind;
  int line;
  std::string name;
  Value literal;
  bool negated = false;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;

  Expr(Kind k, int l) : kind(k), line(l) {}
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Param {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  enum Kind {
    Text,        // text
    Output,      // {{ expr }}
    If,          // branches (cond, body)..., else_body
    For,         // for targets in expr [if cond] [recursive]: body else else_body
    Set,         // targets = expr; with attr: targets[0].attr = expr
    SetBlock,    // targets[0] = rendered body, passed through filter (may be null)
    Macro,       // name(params): body
    CallBlock,   // expr is the call; params are the caller's; body is caller()
    FilterBlock, // filter (input null) applied to rendered body
    Group,       // body, no scope (e.g. {% generation %})
    Break,
    Continue,
    Do,          // evaluate expr, discard
    With,        // params (name = value, evaluated outside) visible in body only
  };
  Kind kind;
  int line;
  std::string text;
  std::string name;
  std::string attr;
  ExprPtr expr;
  ExprPtr cond;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<Param> params;
  bool recursive = false;  // For: `loop(items)` renders the loop again one level deeper
  // Macro: whether the body reads `varargs` / `kwargs`, which lets a call pass more positional
  // or unknown keyword arguments than its parameters (as Jinja2 decides, from the body).
  bool catch_varargs = false, catch_kwargs = false;

  Stmt(Kind k, int l) : kind(k), line(l) {}
};

struct Program {
  Body body;
};

// Whether `name` is read anywhere in body (nested statements and expressions included).
bool mentions(const Body& body, const std::string& name);

}  // namespace minfer::chat

#!/usr/bin/env python3
"""Differential check of minfer's chat-template interpreter against Python Jinja2, set up the way
Hugging Face transformers' apply_chat_template sets it up (a developer's tool, like ../shared/oracle
for llama.cpp: the tests never need Python).

    python3 scripts/jinja-diff.py [--minfer build/minfer] [--out DIR] TEMPLATE.jinja ...
    python3 scripts/jinja-diff.py --snippets FILE     # one template per line, rendered with no messages

Each template renders with a set of conversations (system, multi-turn, tool calls with object and
string arguments, tool results, reasoning content, content parts, unicode), with and without the
generation prompt, with tools/documents None and undefined, and enable_thinking unset/true/false
where the template reads it. A render counts as MATCH (same bytes), BOTH_ERROR, DIFF,
MINFER_ERROR_ONLY or JINJA_ERROR_ONLY; the script prints the counts and every case of the last
three, and exits 1 when there is one. Needs Jinja2 3.1 (`apt install python3-jinja2` or pip).

Reference environment (transformers' _compile_jinja_template): ImmutableSandboxedEnvironment(
trim_blocks=True, lstrip_blocks=True, extensions=[{% generation %} as transparent, loopcontrols]),
tojson = json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False),
raise_exception, strftime_now on a fixed clock (minfer gets the same through MINFER_FAKE_NOW).
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

FAKE_NOW = datetime(2026, 12, 5, 0, 0, 0)
FAKE_NOW_ENV = "2026-12-05T00:00:00"


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} ... {% endgeneration %}: renders its body unchanged."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


ENV = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[AssistantTracker, jinja2.ext.loopcontrols])
ENV.filters["tojson"] = _tojson
ENV.globals["raise_exception"] = _raise_exception
ENV.globals["strftime_now"] = FAKE_NOW.strftime


def render_ref(source, variables):
    try:
        return True, ENV.from_string(source).render(**copy.deepcopy(variables))
    except Exception as e:  # noqa: BLE001 - any failure is a render error
        return False, f"{type(e).__name__}: {e}"


def render_minfer(minfer, path, variables, tmp):
    v = dict(variables)
    messages = v.pop("messages")
    agp = v.pop("add_generation_prompt")
    msgs, vrs = os.path.join(tmp, "msgs.json"), os.path.join(tmp, "vars.json")
    with open(msgs, "w", encoding="utf-8") as f:
        json.dump(messages, f, ensure_ascii=False)
    with open(vrs, "w", encoding="utf-8") as f:
        json.dump(v, f, ensure_ascii=False)
    cmd = [minfer, "template", "--file", path, "--messages", "@" + msgs, "--vars", "@" + vrs]
    if agp:
        cmd.append("--add-generation-prompt")
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=30, env=dict(os.environ, MINFER_FAKE_NOW=FAKE_NOW_ENV))
    except subprocess.TimeoutExpired:
        return False, "TIMEOUT"
    if p.returncode != 0:
        return False, p.stderr.decode("utf-8", "replace").strip()
    return True, p.stdout.decode("utf-8", "surrogateescape")


# The conversations each template renders.
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                         "description": "Temperature unit"},
                "days": {"type": "integer", "description": "Forecast days", "default": 1},
            },
            "required": ["city"],
        },
    },
}

RICH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.\nSecond line of description.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Query text", "minLength": 1},
                "limit": {"type": "integer", "description": "Max results", "minimum": 1, "maximum": 50, "default": 10},
                "score": {"type": "number", "description": "Min score", "default": 0.5},
                "safe": {"type": "boolean", "description": "Safe search", "default": True},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"},
                "filters": {"type": "object", "description": "Filters",
                            "properties": {"lang": {"type": "string", "enum": ["en", "fr"]},
                                           "year": {"type": ["integer", "null"]}},
                            "required": ["lang"]},
                "mode": {"type": "string", "description": "Mode", "anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": True},
                "points": {"type": "array", "description": "Points", "items": {"type": "object", "properties": {
                    "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}},
            },
            "required": ["query"],
        },
    },
}


# A call whose arguments hold every JSON type, awkward numbers among them.
RICH_CALL = {"id": "call_aaa111222", "type": "function",
             "function": {"name": "get_weather", "arguments": {
                 "city": "Paris", "days": 3, "temp": 21.5, "whole": 3.0, "big": 1e20, "small": 1.5e-7,
                 "neg": -2, "flag": True, "off": False, "nothing": None,
                 "list": [1, "a", False, None, 2.25], "obj": {"k": "v", "n": {"x": [1]}}}}}

SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "Hello!"}
A1 = {"role": "assistant", "content": "Hi there, how can I help?"}
U2 = {"role": "user", "content": "What's the weather in Paris?"}


def tool_conv(args, content=""):
    return [
        U2,
        {"role": "assistant", "content": content,
         "tool_calls": [{"id": "call_abc123456", "type": "function",
                         "function": {"name": "get_weather", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "call_abc123456", "name": "get_weather",
         "content": "{\"temperature\": 20, \"condition\": \"sunny\"}"},
        {"role": "user", "content": "Thanks! And tomorrow?"},
    ]


CASES = {
    "a_user": dict(messages=[U1]),
    "b_sys_user": dict(messages=[SYS, U1]),
    "c_multiturn": dict(messages=[SYS, U1, A1, U2]),
    "d_tool_dictargs": dict(messages=tool_conv({"city": "Paris"}), tools=[TOOL]),
    "d_tool_strargs": dict(messages=tool_conv("{\"city\": \"Paris\"}"), tools=[TOOL]),
    "d_tool_nullcontent": dict(messages=tool_conv({"city": "Paris", "days": 2}, None), tools=[TOOL]),
    "e_reasoning_last": dict(messages=[U2, {"role": "assistant", "content": "It is sunny.",
                                            "reasoning_content": "The user asks about weather."}]),
    "e_reasoning_mid": dict(messages=[U2, {"role": "assistant", "content": "It is sunny.",
                                           "reasoning_content": "The user asks about weather."},
                                      {"role": "user", "content": "Great."}]),
    "e_thinking_field": dict(messages=[U2, {"role": "assistant", "content": "It is sunny.",
                                            "thinking": "Weather question."}]),
    "f_parts_user": dict(messages=[{"role": "user", "content": [
        {"type": "text", "text": "Describe"}, {"type": "text", "text": " this."}]}]),
    "f_parts_sys_user": dict(messages=[
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]),
    "g_unicode_escapes": dict(messages=[
        {"role": "system", "content": "Réponds en français. \"quotes\" \\ back\tslash"},
        {"role": "user", "content": "Привет 世界 😀\nline2 </s> {{ not a tag }}"}],
        tools=[{"type": "function", "function": {
            "name": "say", "description": "Say «hi» — ünïcode",
            "parameters": {"type": "object", "properties": {
                "text": {"type": "string", "description": "Text with \"quotes\""}},
                "required": ["text"]}}}]),
    "h_rich_args_schema": dict(messages=[
        U2,
        {"role": "assistant", "content": "Let me check.",
         "tool_calls": [
             RICH_CALL,
             {"id": "call_bbb333444", "type": "function",
              "function": {"name": "search", "arguments": {"query": "it's \"quoted\" \\ and\nnewline"}}}]},
        {"role": "tool", "tool_call_id": "call_aaa111222", "name": "get_weather", "content": "20C"},
        {"role": "tool", "tool_call_id": "call_bbb333444", "name": "search", "content": "[]"},
        {"role": "user", "content": "ok"}],
        tools=[TOOL, RICH_TOOL]),
    "h2_single_rich_call": dict(messages=[
        U2,
        {"role": "assistant", "content": "",
         "tool_calls": [
             RICH_CALL]},
        {"role": "tool", "tool_call_id": "call_aaa111222", "name": "get_weather", "content": "20C"}],
        tools=[RICH_TOOL]),
    "i_think_in_content": dict(messages=[
        U1, {"role": "assistant", "content": "<think>\nI should greet.\n</think>\n\nHello again!  "},
        {"role": "user", "content": "  padded  \n"}]),
}

def variants(source):
    """(name, extra vars) per template: enable_thinking true/false where the template reads it."""
    out = [("", {})]
    if "enable_thinking" in source:
        out = [("", {}), ("+think", {"enable_thinking": True}), ("+nothink", {"enable_thinking": False})]
    return out


def build_vars(case, extra, agp, undef_tools):
    v = {"messages": copy.deepcopy(case["messages"]),
         "tools": copy.deepcopy(case.get("tools")),
         "documents": None,
         "add_generation_prompt": agp,
         "bos_token": "<s>", "eos_token": "</s>"}
    if undef_tools:  # llama.cpp-style: no tools/documents variables at all
        del v["tools"], v["documents"]
    v.update(extra)
    return v




def variants(source):
    """enable_thinking unset, true and false where the template reads it."""
    if "enable_thinking" in source:
        return [("", {}), ("+think", {"enable_thinking": True}), ("+nothink", {"enable_thinking": False})]
    return [("", {})]


def build_vars(case, extra, agp, undef_tools):
    v = {"messages": copy.deepcopy(case["messages"]), "tools": copy.deepcopy(case.get("tools")),
         "documents": None, "add_generation_prompt": agp, "bos_token": "<s>", "eos_token": "</s>"}
    if undef_tools:  # as llama.cpp renders: no tools/documents variables at all
        del v["tools"], v["documents"]
    v.update(extra)
    return v


def category(rok, rout, mok, mout):
    if rok and mok:
        return "MATCH" if rout == mout else "DIFF"
    return "MINFER_ERROR_ONLY" if rok else "JINJA_ERROR_ONLY" if mok else "BOTH_ERROR"


def report(label, cat, rout, mout):
    if cat == "DIFF":
        i = 0
        while i < min(len(rout), len(mout)) and rout[i] == mout[i]:
            i += 1
        print(f"DIFF {label} @{i}\n  jinja2: {rout[max(0, i - 40):i + 60]!r}\n  minfer: {mout[max(0, i - 40):i + 60]!r}")
    elif cat in ("MINFER_ERROR_ONLY", "JINJA_ERROR_ONLY"):
        print(f"{cat} {label}\n  jinja2: {rout[:300]!r}\n  minfer: {mout[:300]!r}")


CATS = ["MATCH", "BOTH_ERROR", "DIFF", "MINFER_ERROR_ONLY", "JINJA_ERROR_ONLY"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("templates", nargs="*", help="template files")
    ap.add_argument("--minfer", default=os.path.join(os.path.dirname(__file__), "..", "build", "minfer"))
    ap.add_argument("--snippets", help="a file of one-line templates, each rendered with no messages")
    ap.add_argument("--out", help="a folder for every render's two outputs")
    args = ap.parse_args()
    totals = dict.fromkeys(CATS, 0)
    with tempfile.TemporaryDirectory() as tmp:
        if args.snippets:
            with open(args.snippets, encoding="utf-8") as f:
                lines = [line for line in f.read().split("\n") if line.strip()]
            for k, line in enumerate(lines):
                path = os.path.join(tmp, "snippet.jinja")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(line)
                variables = {"messages": [], "add_generation_prompt": False}
                rok, rout = render_ref(line, variables)
                mok, mout = render_minfer(args.minfer, path, variables, tmp)
                cat = category(rok, rout, mok, mout)
                totals[cat] += 1
                report(f"line {k + 1}: {line[:120]}", cat, rout, mout)
        for path in args.templates:
            with open(path, encoding="utf-8", newline="") as f:
                source = f.read()
            counts = dict.fromkeys(CATS, 0)
            for cname, case in CASES.items():
                for vname, extra in variants(source):
                    for undef in ((False, True) if not case.get("tools") else (False,)):
                        for agp in (False, True):
                            label = f"{os.path.basename(path)} [{cname}{vname}{'+undeftools' if undef else ''}{'+agp' if agp else ''}]"
                            variables = build_vars(case, extra, agp, undef)
                            rok, rout = render_ref(source, variables)
                            mok, mout = render_minfer(args.minfer, path, variables, tmp)
                            cat = category(rok, rout, mok, mout)
                            counts[cat] += 1
                            report(label, cat, rout, mout)
                            if args.out:
                                os.makedirs(args.out, exist_ok=True)
                                base = os.path.join(args.out, label.replace(" ", "").replace("/", "_"))
                                for ext, txt in (("jinja2", rout), ("minfer", mout)):
                                    with open(f"{base}.{ext}", "w", encoding="utf-8", errors="surrogateescape") as f:
                                        f.write(txt)
            print(f"{os.path.basename(path)}: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
            for k in CATS:
                totals[k] += counts[k]
    print("total: " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    return 1 if totals["DIFF"] or totals["MINFER_ERROR_ONLY"] or totals["JINJA_ERROR_ONLY"] else 0


if __name__ == "__main__":
    sys.exit(main())

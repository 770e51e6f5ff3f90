#!/usr/bin/env bash
# Fuzzes a parser: scripts/fuzz.sh BUILD_DIR SECONDS [gguf|template|imatrix|openai_request|gbnf|json_schema|kv_state|kld_base]
# BUILD_DIR must hold fuzz_<target> built with -DMINFER_FUZZ=ON (clang).
# gguf (default): the seed corpus is the first 64 KB of every GGUF file in ../shared plus a
# small complete GGUF built here, so the fuzzer starts from real headers.
# template: the seeds are the real chat templates in ../shared/templates and two of Python's
# built-ins and statements (with, recursive loops, format specs, groupby, ...).
# imatrix: the seeds are a small legacy importance-matrix file and a small GGUF one built here.
# openai_request: the seeds are chat and completion request bodies (minfer serve).
# gbnf: the seeds are GBNF grammars (JSON, a chess-like one, repetitions), each with text to match.
# json_schema: the seeds are JSON schemas (objects, refs, patterns, ranges), each with text to match.
# kv_state: the seed is a valid saved state the fuzz target writes itself (its checksum).
# kld_base: the seed is a small KL-divergence base file (16-token vocabulary, 2 rows).
# Exits non-zero when the fuzzer finds a crash.
set -euo pipefail
BUILD_DIR=${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}
SECONDS_TO_RUN=${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}
TARGET=${3:-gguf}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD_DIR/fuzz/fuzz_$TARGET"
[ -x "$BIN" ] || { echo "fuzz.sh: $BIN not found; build the fuzz_$TARGET target first" >&2; exit 2; }

SEED="$BUILD_DIR/fuzz-seed-$TARGET"
CORPUS="$BUILD_DIR/fuzz-corpus-$TARGET"
ARTIFACTS="$BUILD_DIR/fuzz-artifacts-$TARGET"
rm -rf "$SEED"
mkdir -p "$SEED" "$CORPUS" "$ARTIFACTS"

if [ "$TARGET" = openai_request ]; then
  # request bodies as OpenAI's API reference and llama-server's extensions write them
  printf '%s' '{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"}]}],"max_completion_tokens":16,"temperature":0.7,"top_p":0.9,"seed":42,"stop":["\n"],"stream":true,"stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":3,"logit_bias":{"15043":-1.5,"2":false},"chat_template_kwargs":{"enable_thinking":false}}' > "$SEED/chat.json"
  printf '%s' '{"prompt":"Once upon a time","max_tokens":8,"n":1,"logprobs":null,"top_k":40,"min_p":0.05,"repeat_penalty":1.1,"repeat_last_n":-1,"ignore_eos":true,"echo":false,"logprobs":2,"logit_bias":[[1,false],[7,2]]}' > "$SEED/completion.json"
  printf '%s' '{"prompt":[1,403,407],"n_predict":-1,"seed":-1,"stop":"END","frequency_penalty":0.5,"presence_penalty":-0.5}' > "$SEED/tokens.json"
  printf '%s' '{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer","minimum":3}},"required":["a"]}}}}' > "$SEED/schema.json"
  printf '%s' '{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]},{"role":"tool","tool_call_id":"c1","content":"2"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":true}' > "$SEED/tools.json"
  printf '%s' '{"input_prefix":"def f():\n","input_suffix":"\n","prompt":"  ","input_extra":[{"filename":"a.py","text":"x = 1"}],"n_predict":8,"n_probs":2,"return_tokens":true}' > "$SEED/infill.json"
  printf '%s' '{"input":["Once upon a time",[1,2,3]],"encoding_format":"base64","model":"m"}' > "$SEED/embeddings.json"
  printf '%s' '{"content":["Once",[1,2]],"embd_normalize":-1}' > "$SEED/embeddings-native.json"
  printf '%s' '{"prompt":"Hi","speculative.n_max":4,"speculative.n_min":2,"speculative.p_min":0.5}' > "$SEED/speculative.json"
  # replies as models write calls (the same bytes go to the reply parsers)
  printf '%s' 'Sure.<tool_call>
{"name": "f", "arguments": {"a": [1, "}"]}}
</tool_call>' > "$SEED/hermes.txt"
  printf '%s' '<|python_tag|>{"name": "f", "parameters": {}}; {"name": "g", "arguments": {"x": null}}' > "$SEED/llama3.txt"
  printf '%s' 'ok [TOOL_CALLS][{"name": "f", "arguments": {"a": 1}, "id": "abcdefghi"}]' > "$SEED/mistral.txt"
  echo "fuzz.sh: 12 seeds in $SEED; fuzzing fuzz_openai_request for $SECONDS_TO_RUN s"
  exec "$BIN" "$CORPUS" "$SEED" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
fi

if [ "$TARGET" = gbnf ]; then
  # a grammar, a NUL byte, then pieces of text cut at \x01 (fuzz/fuzz_gbnf.cpp)
  printf 'root ::= object\nobject ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws\nvalue ::= object | string | [0-9]+ ws\nstring ::= "\\"" ( [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" ["\\\\bfnrt] )* "\\"" ws\nws ::= | " " | "\\n" [ \\t]{0,20}\n\0{"a\x01": 1\x012}' > "$SEED/json"
  printf 'root ::= (\n  "1. " move " " move "\\n"\n  ([1-9] [0-9]? ". " move " " move "\\n")+\n)\nmove ::= (pawn | castle) [+#]?  # comment\npawn ::= [a-h] [1-8]\ncastle ::= "O-O" ("-O")?\n\0001. e4 e5\n\x012. O-O-O+ a1\n' > "$SEED/chess"
  printf 'root ::= "\\u00e9"{2,4} [^a-c]* . "x"? ("ab" | [\\x41-\\x5A]){0,3}\n\0\xc3\x01\xa9\xc3\xa9zz\x01\xf0\x9f\x98\x80' > "$SEED/utf8"
  echo "fuzz.sh: 3 seeds in $SEED; fuzzing fuzz_gbnf for $SECONDS_TO_RUN s"
  exec "$BIN" "$CORPUS" "$SEED" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
fi

if [ "$TARGET" = json_schema ]; then
  # a schema, a NUL byte, then pieces of text cut at \x01 (fuzz/fuzz_json_schema.cpp)
  printf '%s\0%s' '{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":20},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"enum":["a","b",null]},"maxItems":3}},"required":["name"],"additionalProperties":{"type":"number"}}' $'{"name": "x\x01y", "age"\x01: 42, "z": 1e5}' > "$SEED/object"
  printf '%s\0%s' '{"$ref":"#/$defs/node","$defs":{"node":{"anyOf":[{"type":"null"},{"type":"object","properties":{"v":{"type":"integer","exclusiveMinimum":-1000},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}]}}}' $'{"v": -5, "kids": [null, {"kids"\x01: []}]}' > "$SEED/tree"
  printf '%s\0%s' '{"allOf":[{"properties":{"d":{"type":"string","format":"date-time"}}},{"anyOf":[{"properties":{"p":{"type":"string","pattern":"^(\\([0-9]{1,3}\\))?[a-z]+|x.y$"}}}]}]}' $'{"d": "2024-01-01T00:00:00Z", "p": "(12)ab\x01c"}' > "$SEED/patterns"
  echo "fuzz.sh: 3 seeds in $SEED; fuzzing fuzz_json_schema for $SECONDS_TO_RUN s"
  exec "$BIN" "$CORPUS" "$SEED" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
fi

if [ "$TARGET" = kv_state ]; then
  MINFER_FUZZ_SEED_DIR="$SEED" "$BIN" -runs=0 >/dev/null 2>&1
  [ -s "$SEED/valid.state" ] || { echo "fuzz.sh: fuzz_kv_state wrote no seed" >&2; exit 1; }
  echo "fuzz.sh: 1 seed in $SEED; fuzzing fuzz_kv_state for $SECONDS_TO_RUN s"
  exec "$BIN" "$CORPUS" "$SEED" -max_total_time="$SECONDS_TO_RUN" -max_len=16384 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
fi

if [ "$TARGET" = template ]; then
  n=0
  for f in "$ROOT"/../shared/templates/*.jinja "$ROOT"/../shared/oracle/templates/*.jinja; do
    [ -f "$f" ] || continue
    cp "$f" "$SEED/$(basename "$f")"
    n=$((n + 1))
  done
  # the Python built-ins and statements the real templates rarely reach
  printf '%s' "{% with a = {0: 1, 2.5: 'x'} %}{{ a|tojson(sort_keys=true, ensure_ascii=true) }}{% endwith %}{% for x in [[1, [2]], 3] recursive %}{{ loop(x) if x is iterable else '{:>{}.2f}|{:#x}'.format(x, loop.depth, x) }}{{ loop.changed(x) }}{% endfor %}" > "$SEED/python-builtins.jinja"
  printf '%s' "{% set c = cycler('a', 'b') %}{% set j = joiner() %}{% for g in messages|groupby('role') %}{{ j() }}{{ c.next() }}{{ g.grouper|truncate(3) }}{{ g.list|slice(2)|list }}{% endfor %}{{ 'a%cb' % 0x41 }}{{ 'x'.center(5, '-').partition('x') }}{{ 'a\\nb'.splitlines() }}{{ '1_0'|int }}{{ 1234|round(-2) }}" > "$SEED/python-helpers.jinja"
  n=$((n + 2))
  echo "fuzz.sh: $n seeds in $SEED; fuzzing fuzz_template for $SECONDS_TO_RUN s"
  exec "$BIN" "$CORPUS" "$SEED" -max_total_time="$SECONDS_TO_RUN" -max_len=8192 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
fi

u32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)))"; }
u64() { u32 "$1"; u32 0; }
str() { u64 "${#1}"; printf '%s' "$1"; }

if [ "$TARGET" = kld_base ]; then
  # "MINFERKL", version 1, n_ctx 4, n_vocab 16, 3 tokens, then 2 rows (f32 -8.0, 16 u16)
  { printf 'MINFERKL'; u32 1; u64 4; u64 16; u64 3; u32 1; u32 5; u32 15
    for r in 1 2; do u32 3238002688; head -c 32 /dev/urandom; done; } > "$SEED/small.kld"
  echo "fuzz.sh: 1 seed in $SEED; fuzzing fuzz_kld_base for $SECONDS_TO_RUN s"
  exec "$BIN" "$CORPUS" "$SEED" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
fi

if [ "$TARGET" = imatrix ]; then
  # legacy: 2 entries (name length, name, ncall, nval, floats), then chunks and a dataset name
  { u32 2; u32 8; printf 'a.weight'; u32 4; u32 2; u32 1065353216; u32 1073741824
    u32 8; printf 'b.weight'; u32 0; u32 1; u32 1077936128; u32 10; u32 4; printf 'wiki'; } > "$SEED/legacy.dat"
  # GGUF: the three metadata keys, a.weight.in_sum2 [2] and a.weight.counts [1] (F32)
  { printf 'GGUF'; u32 3; u64 2; u64 3
    str imatrix.datasets; u32 9; u32 8; u64 1; str wiki
    str imatrix.chunk_count; u32 4; u32 10
    str imatrix.chunk_size; u32 4; u32 512
    str a.weight.in_sum2; u32 1; u64 2; u32 0; u64 0
    str a.weight.counts; u32 1; u64 1; u32 0; u64 32; } > "$SEED/small.gguf"
  size=$(stat -c %s "$SEED/small.gguf")
  head -c $(( (32 - size % 32) % 32 )) /dev/zero >> "$SEED/small.gguf"
  { u32 1065353216; u32 1073741824; head -c 24 /dev/zero; u32 1065353216; } >> "$SEED/small.gguf"
  echo "fuzz.sh: 2 seeds in $SEED; fuzzing fuzz_imatrix for $SECONDS_TO_RUN s"
  exec "$BIN" "$CORPUS" "$SEED" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1
fi

n=0
for f in "$ROOT"/../shared/models/*.gguf "$ROOT"/../shared/vocab/*.gguf; do
  [ -f "$f" ] || continue
  head -c 65536 "$f" > "$SEED/$(basename "$f")"
  n=$((n + 1))
done

# A complete little-endian GGUF v3: 2 keys, 2 tensors (F32 [4], Q8_0 [32]), data.
{
  printf 'GGUF'; u32 3; u64 2; u64 2
  str general.architecture; u32 8; str llama
  str tokenizer.ggml.tokens; u32 9; u32 8; u64 3; str a; str bc; str '<s>'
  str t0; u32 1; u64 4; u32 0; u64 0
  str t1; u32 2; u64 32; u64 1; u32 8; u64 32
} > "$SEED/small.gguf"
size=$(stat -c %s "$SEED/small.gguf")
head -c $(( (32 - size % 32) % 32 + 32 + 34 + 30 )) /dev/zero >> "$SEED/small.gguf"
n=$((n + 1))
echo "fuzz.sh: $n seeds in $SEED; fuzzing for $SECONDS_TO_RUN s"

"$BIN" "$CORPUS" "$SEED" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -artifact_prefix="$ARTIFACTS/" -print_final_stats=1

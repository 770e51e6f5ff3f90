#!/usr/bin/env bash
# Builds and runs every test: the unit and golden tests (Release build with GCC; again with Clang,
# but for the tests labelled slow), the unit tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer, and the fuzzers of the GGUF reader (60 s), the chat-template
# interpreter (30 s), the importance-matrix reader (20 s), the server's request and tool-call parsers (20 s),
# the GBNF grammars (20 s), the JSON schemas (20 s), the saved-state and KL-divergence base readers (10 s each).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)
# Paths relative to the checkout in ccache's hash, so a fresh clone reuses earlier objects.
export CCACHE_BASEDIR="$PWD"

echo "== release build + tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$JOBS"
ctest --test-dir build --output-on-failure -j"$JOBS"

echo "== clang release build + tests (the kernels' ISA regions and bit-exact rounding under Clang)"
CC=clang CXX=clang++ cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-clang -j"$JOBS"
ctest --test-dir build-clang --output-on-failure -j"$JOBS" -LE slow

echo "== sanitizer build (ASan + UBSan) + unit tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMINFER_SANITIZE=ON \
      -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" >/dev/null
cmake --build build-asan -j"$JOBS"
ctest --test-dir build-asan --output-on-failure -j"$JOBS" -LE slow

if [ -f fuzz/CMakeLists.txt ]; then
  echo "== fuzzing the GGUF reader (60 s), the chat-template interpreter (30 s), the imatrix reader (20 s), the server's request and tool-call parsers (20 s), the GBNF grammars (20 s), JSON schemas (20 s), saved states and KL-divergence base files (10 s each)"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DMINFER_FUZZ=ON -DMINFER_BUILD_TESTS=OFF >/dev/null
  cmake --build build-fuzz -j"$JOBS" --target fuzz_gguf fuzz_template fuzz_imatrix fuzz_openai_request fuzz_gbnf fuzz_json_schema fuzz_kv_state fuzz_kld_base
  bash scripts/fuzz.sh build-fuzz 60 gguf
  bash scripts/fuzz.sh build-fuzz 30 template
  bash scripts/fuzz.sh build-fuzz 20 imatrix
  bash scripts/fuzz.sh build-fuzz 20 openai_request
  bash scripts/fuzz.sh build-fuzz 20 gbnf
  bash scripts/fuzz.sh build-fuzz 20 json_schema
  bash scripts/fuzz.sh build-fuzz 10 kv_state
  bash scripts/fuzz.sh build-fuzz 10 kld_base
fi

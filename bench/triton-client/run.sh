#!/usr/bin/env bash
# Runs Triton's own Python client examples (src/python/examples/simple_grpc_*.py and
# simple_http_*.py of github.com/triton-inference-server/client) against `serve-fn start`, one
# PASS/FAIL line per example, with the client library and its gRPC stubs generated from
# github.com/triton-inference-server/common's protos as the client's build_wheel.py lays them out.
#
#   bench/triton-client/run.sh <client checkout> <common checkout>
#   DECORATED=1 bench/triton-client/run.sh …   (against decorated @Tensors classes instead)
#   TEXT=1 bench/triton-client/run.sh …        (tritonclient.http and .grpc on text model folders)
#
# Needs `npm run build` first, and a python3 ($PYTHON) with grpcio, grpcio-tools, protobuf, numpy,
# python-rapidjson, geventhttpclient, gevent and packaging (Debian: python3-grpc-tools
# python3-grpcio python3-protobuf python3-numpy python3-rapidjson python3-geventhttpclient
# python3-gevent python3-packaging, and python3-aiohttp for the HTTP asyncio example). Skips
# without the two checkouts.
set -u
CLIENT=${1:-}
COMMON=${2:-}
if [ ! -d "$CLIENT/src/python/examples" ] || [ ! -f "$COMMON/protobuf/grpc_service.proto" ]; then
  echo "skip: give the triton-inference-server/client and triton-inference-server/common checkouts"
  exit 0
fi
PYTHON=${PYTHON:-python3}
HTTP_PORT=${HTTP_PORT:-18000}
GRPC_PORT=${GRPC_PORT:-18001}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
# As deep under the root as the model sources, so their relative imports of src/ resolve (build-repository.ts).
REPOSITORY="$ROOT/test/.tmp/triton-client-$$"
SERVER=
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
  rm -rf "$WORK" "$REPOSITORY"
}
trap cleanup EXIT

. "$ROOT/bench/triton-client/tritonclient-library.sh"

cd "$ROOT" || exit 1

# Starts serve-fn in control mode $1 on the repository build-repository.ts builds with the arguments after it.
start_server() {
  rm -rf "$REPOSITORY"
  node --import ./loader/register.mjs bench/triton-client/build-repository.ts "$REPOSITORY" "${@:2}" || exit 1
  node bin/serve-fn.js start "$REPOSITORY" --host 127.0.0.1 --port "$HTTP_PORT" --grpc-port "$GRPC_PORT" \
    --model-control-mode "$1" > "$WORK/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/v2/health/ready" > /dev/null && break
    sleep 0.5
  done
  curl -sf "http://127.0.0.1:$HTTP_PORT/v2/health/ready" > /dev/null || { echo "serve-fn did not get ready:"; cat "$WORK/server.log"; exit 1; }
}

stop_server() {
  kill "$SERVER" && wait "$SERVER"
  SERVER=
}

passed=0
total=0
run_example() {
  local name
  name=$(basename "$1" .py)
  case "$name" in simple_grpc_*) url="localhost:$GRPC_PORT" ;; *) url="localhost:$HTTP_PORT" ;; esac
  total=$((total + 1))
  if (cd "$(dirname "$1")" && timeout 120 "$PYTHON" "$1" -u "$url") > "$WORK/$name.log" 2>&1; then
    passed=$((passed + 1))
    echo "PASS $name"
  else
    echo "FAIL $name: $(grep -v '^\s*$' "$WORK/$name.log" | tail -n 1)"
    [ -n "${VERBOSE:-}" ] && cat "$WORK/$name.log"
  fi
}

EXAMPLES="$CLIENT/src/python/examples"
if [ -n "${TEXT:-}" ]; then
  # The clients on text models served with no code: two model folders of seeded weights (the test
  # fixtures' writers), texts in as BYTES, embeddings and rerank scores out.
  rm -rf "$REPOSITORY"
  node --import ./loader/register.mjs bench/triton-client/build-text-models.ts "$REPOSITORY" || exit 1
  node bin/serve-fn.js start "$REPOSITORY" --host 127.0.0.1 --port "$HTTP_PORT" --grpc-port "$GRPC_PORT" > "$WORK/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/v2/health/ready" > /dev/null && break
    sleep 0.5
  done
  "$PYTHON" bench/triton-client/text_model_client.py "localhost:$HTTP_PORT" "localhost:$GRPC_PORT" bge-tiny rerank-tiny
  status=$?
  stop_server
  exit $status
fi
if [ -n "${DECORATED:-}" ]; then
  # The same examples against decorated classes (decorated-models.ts: simple, simple_string and
  # simple_identity with @Tensors interfaces) instead of a repository; the examples of models it
  # does not declare (sequences, repeat_int32, model control) are left out.
  node bin/serve-fn.js start bench/triton-client/decorated-models.ts --host 127.0.0.1 --port "$HTTP_PORT" --grpc-port "$GRPC_PORT" > "$WORK/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/v2/health/ready" > /dev/null && break
    sleep 0.5
  done
  for example in "$EXAMPLES"/simple_grpc_*.py "$EXAMPLES"/simple_http_*.py; do
    case "$example" in *_model_control.py | *sequence* | *custom_repeat*) continue ;; esac
    run_example "$example"
  done
  stop_server
  echo "$passed/$total examples passed (decorated models)"
  exit 0
fi
start_server none
for example in "$EXAMPLES"/simple_grpc_*.py "$EXAMPLES"/simple_http_*.py; do
  case "$example" in *_model_control.py) continue ;; esac
  run_example "$example"
done
stop_server

# The model-control examples each get a server of their own, in explicit mode with nothing loaded, as
# Triton's L0_grpc and L0_http tests start one for them, on a repository of the size each counts.
start_server explicit model-control 8
run_example "$EXAMPLES/simple_grpc_model_control.py"
stop_server
start_server explicit model-control 7
run_example "$EXAMPLES/simple_http_model_control.py"
stop_server
echo "$passed/$total examples passed"

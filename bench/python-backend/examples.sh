#!/usr/bin/env bash
# Runs Triton python_backend's own examples (examples/ of github.com/triton-inference-server/python_backend),
# model.py and config.pbtxt as published, laid out as each example's README lays them out, under
# `serve-fn start`, and their own client.py scripts against it (HTTP on 8000, gRPC on 8001, /metrics
# on 8002 as the clients hard-code: a forwarder serves serve-fn's /metrics there). One PASS/FAIL line
# per client, then P/N.
#
#   bench/python-backend/examples.sh <python_backend checkout> <client checkout> <common checkout>
#
# The client library (tritonclient) is assembled from the client and common checkouts as
# bench/triton-client/run.sh does. Needs `npm run build` first and a python3 ($PYTHON, default
# Debian's /usr/bin/python3) with numpy, grpcio, grpcio-tools, protobuf, python-rapidjson,
# geventhttpclient, gevent, packaging and torch (Debian: python3-numpy python3-grpc-tools
# python3-grpcio python3-protobuf python3-rapidjson python3-geventhttpclient python3-gevent
# python3-packaging python3-torch); the stubs run on the same interpreter. Skips without the checkouts.
set -u
PB=${1:-}
CLIENT=${2:-}
COMMON=${3:-}
if [ ! -d "$PB/examples/add_sub" ] || [ ! -d "$CLIENT/src/python/library/tritonclient" ] || [ ! -f "$COMMON/protobuf/grpc_service.proto" ]; then
  echo "skip: give the triton-inference-server/python_backend, client and common checkouts"
  exit 0
fi
PYTHON=${PYTHON:-/usr/bin/python3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
MODELS="$WORK/models"
SERVER=
FORWARDER=
cleanup() {
  [ -n "$FORWARDER" ] && kill "$FORWARDER" 2>/dev/null
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

. "$ROOT/bench/triton-client/tritonclient-library.sh"

# The repository, as the examples' READMEs build it (one repository for all of them).
E="$PB/examples"
model() { # model <name> <model.py> [config.pbtxt]
  mkdir -p "$MODELS/$1/1"
  cp "$2" "$MODELS/$1/1/model.py"
  [ -n "${3:-}" ] && cp "$3" "$MODELS/$1/config.pbtxt"
  return 0
}
model add_sub "$E/add_sub/model.py" "$E/add_sub/config.pbtxt"
model pytorch "$E/pytorch/model.py" "$E/pytorch/config.pbtxt"
model nobatch_auto_complete "$E/auto_complete/nobatch_model.py"
model batch_auto_complete "$E/auto_complete/batch_model.py"
model bls_sync "$E/bls/sync_model.py" "$E/bls/sync_config.pbtxt"
model bls_async "$E/bls/async_model.py" "$E/bls/async_config.pbtxt"
model repeat_int32 "$E/decoupled/repeat_model.py" "$E/decoupled/repeat_config.pbtxt"
model square_int32 "$E/decoupled/square_model.py" "$E/decoupled/square_config.pbtxt"
model bls_decoupled_sync "$E/bls_decoupled/sync_model.py" "$E/bls_decoupled/sync_config.pbtxt"
model bls_decoupled_async "$E/bls_decoupled/async_model.py" "$E/bls_decoupled/async_config.pbtxt"
model custom_metrics "$E/custom_metrics/model.py" "$E/custom_metrics/config.pbtxt"

cd "$ROOT" || exit 1
# The stubs run on $PYTHON: it is first on PATH for `python3`.
mkdir "$WORK/bin" && ln -s "$PYTHON" "$WORK/bin/python3"
PATH="$WORK/bin:$PATH" node bin/serve-fn.js start "$MODELS" --host 127.0.0.1 --port 8000 --grpc-port 8001 > "$WORK/server.log" 2>&1 &
SERVER=$!
"$PYTHON" -c '
import http.server, urllib.request
class Forward(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = urllib.request.urlopen("http://127.0.0.1:8000" + self.path).read()
        self.send_response(200); self.send_header("Content-Type", "text/plain"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *args): pass
http.server.HTTPServer(("127.0.0.1", 8002), Forward).serve_forever()' &
FORWARDER=$!
for _ in $(seq 1 240); do
  curl -sf "http://127.0.0.1:8000/v2/health/ready" > /dev/null && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:8000/v2/health/ready" > /dev/null || { echo "serve-fn did not get ready:"; cat "$WORK/server.log"; exit 1; }

passed=0
total=0
run_client() { # run_client <label> <client.py>
  total=$((total + 1))
  if (cd "$(dirname "$2")" && PYTHONPATH="$WORK" timeout 120 "$PYTHON" "$2") > "$WORK/$1.log" 2>&1; then
    passed=$((passed + 1))
    echo "PASS $1"
  else
    echo "FAIL $1: $(grep -v '^\s*$' "$WORK/$1.log" | tail -n 1)"
    [ -n "${VERBOSE:-}" ] && cat "$WORK/$1.log"
  fi
}
run_client add_sub "$E/add_sub/client.py"
run_client add_sub_grpc "$ROOT/bench/python-backend/add_sub_grpc_client.py"
run_client pytorch "$E/pytorch/client.py"
run_client auto_complete "$E/auto_complete/client.py"
run_client bls_sync "$E/bls/sync_client.py"
run_client bls_async "$E/bls/async_client.py"
run_client decoupled_repeat "$E/decoupled/repeat_client.py"
run_client decoupled_square "$E/decoupled/square_client.py"
run_client bls_decoupled_sync "$E/bls_decoupled/sync_client.py"
run_client bls_decoupled_async "$E/bls_decoupled/async_client.py"
run_client custom_metrics "$E/custom_metrics/client.py"
[ -n "${VERBOSE:-}" ] && cat "$WORK/server.log"
echo "$passed/$total python_backend examples passed"

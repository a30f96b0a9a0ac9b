#!/usr/bin/env bash
# Runs serve-fn's NPU tests on an Atlas machine against the real CANN toolkit and NPU driver instead
# of the simulations in test/native (docs/npu.md, "Testing on an Atlas machine"). This script has
# itself only been run against the simulation's layout: no Ascend hardware was available.
#
#   source /usr/local/Ascend/cann/set_env.sh     # or /usr/local/Ascend/ascend-toolkit/set_env.sh
#   SOC=Ascend310P3 DEVICES=0 bench/npu/run-on-atlas.sh [--om-models DIR]
#
# SOC: the chip as ATC's --soc_version names it (`npu-smi info` shows it, e.g. 310P3 → Ascend310P3).
# DEVICES: the NPU ids the multi-device tests use (default 0).
# --om-models DIR: also run the OM route's tests on the .om files docs/npu.md's ATC recipe writes.
# The log goes to npu-atlas-<date>.log; please attach it to your report with `npu-smi info`.
set -euo pipefail
cd "$(dirname "$0")/../.."

om_models=""
while [ $# -gt 0 ]; do
  case "$1" in
    --om-models) om_models="$(cd "$2" && pwd)"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

cann_home="${SERVE_FN_CANN_HOME:-${ASCEND_HOME_PATH:-}}"
if [ -z "$cann_home" ] || [ ! -f "$cann_home/lib64/libge_runner.so" ]; then
  echo "No CANN toolkit with lib64/libge_runner.so: source CANN's set_env.sh (it sets ASCEND_HOME_PATH) or set SERVE_FN_CANN_HOME." >&2
  exit 1
fi
if [ -z "${SOC:-}" ]; then
  echo "Set SOC to the chip's --soc_version, e.g. SOC=Ascend310P3 (npu-smi info names it)." >&2
  exit 1
fi

log="npu-atlas-$(date -u +%Y%m%dT%H%M%SZ).log"
exec > >(tee "$log") 2>&1
echo "CANN home: $cann_home"
cat "$cann_home/version.cfg" 2>/dev/null || true
cat "$cann_home"/*/ascend_toolkit_install.info 2>/dev/null || cat "$cann_home/ascend_toolkit_install.info" 2>/dev/null || true
npu-smi info || echo "npu-smi not found: is the NPU driver installed?"
node --version

[ -d node_modules ] || npm ci
# binding.gyp builds serve_fn_npu_ge.node as well when SERVE_FN_CANN_HOME holds lib64/libge_runner.so.
SERVE_FN_CANN_HOME="$cann_home" npm run build:native
addon="$PWD/native/build/Release/serve_fn_npu_ge.node"
if [ ! -f "$addon" ]; then
  echo "npm run build:native did not build $addon" >&2
  exit 1
fi
npm run build
node -e "
  const addon = require(process.argv[1]);
  console.log('geInfo', addon.geInfo());
  console.log('probeLibrary', addon.probeLibrary());
" "$addon"

export SERVE_FN_NPU_REAL=1
export SERVE_FN_CANN_HOME="$cann_home"
export SERVE_FN_NPU_ADDON="$addon"
export SERVE_FN_GE_TEST_SOC="$SOC"
export SERVE_FN_NPU_TEST_DEVICES="${DEVICES:-0}"

# The GE tests that take a real CANN (SERVE_FN_NPU_REAL=1): serve-fn convert, its .om through the
# OM path, doctor's GE line, GeBackend (slots, gears, GEInitialize again after the last unload) and
# the served repositories and decorated class; what needs the simulation (its counters, its device
# memory report, injected failures) skips, and results are compared with ONNX Runtime on the CPU.
# test/native/ge-addon.test.ts and ge-convert.test.ts skip whole under SERVE_FN_NPU_REAL=1.
# AscendCL for the GE tests: the toolkit's, unless SERVE_FN_ACL_LIBRARY names one (else the search of docs/npu.md).
if [ -z "${SERVE_FN_ACL_LIBRARY:-}" ] && [ -f "$cann_home/lib64/libascendcl.so" ]; then
  export SERVE_FN_ACL_LIBRARY="$cann_home/lib64/libascendcl.so"
fi
npx vitest run test/e2e/cli-convert.test.ts test/native/npu-ge-backend.test.ts test/native/npu-ge-served.test.ts

if [ -n "$om_models" ]; then
  SERVE_FN_NPU_MODELS="$om_models" npx vitest run test/native --exclude 'test/native/sim*.test.ts' --exclude 'test/native/*ge*.test.ts'
fi

npx serve-fn doctor
echo "Done; the log is $log."

// serve_fn_npu: Ascend OM models through AscendCL, bound at run time. serve_fn_npu_ge (SERVE_FN_WITH_GE, built only
// against a CANN toolkit) adds ONNX models through the GE graph engine. Only registers exports;
// see src/backends/npu/native-binding.ts for the typed surface.
#include <napi.h>

#include "addon-state.h"
#include "describe-devices-worker.h"
#include "library-probe.h"
#include "load-worker.h"
#include "om-model.h"

#ifdef SERVE_FN_WITH_GE
#include "ge-convert-worker.h"
#include "ge-environment.h"
#include "ge-load-worker.h"
#include "ge-model.h"
#endif

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto *state = new AddonState();
  env.AddCleanupHook([state]() { delete state; });
  state->omModelConstructor = Napi::Persistent(OmModel::DefineClass(env));
  exports.Set("probeLibrary", Napi::Function::New(env, ProbeLibrary, "probeLibrary"));
  exports.Set("describeDevices", Napi::Function::New(env, DescribeDevices, "describeDevices"));
  exports.Set("loadModel", Napi::Function::New(env, LoadModel, "loadModel", state));
#ifdef SERVE_FN_WITH_GE
  state->geModelConstructor = Napi::Persistent(GeModel::DefineClass(env));
  exports.Set("geInfo", Napi::Function::New(env, GeInfo, "geInfo"));
  exports.Set("loadGeModel", Napi::Function::New(env, LoadGeModel, "loadGeModel", state));
  exports.Set("convertGeModel", Napi::Function::New(env, ConvertGeModel, "convertGeModel"));
#endif
  return exports;
}

}  // namespace

NODE_API_MODULE(NODE_GYP_MODULE_NAME, Init)

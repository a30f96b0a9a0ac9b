// GE's process-wide state, for loads and conversions alike: GEInitialize once for the first GE model
// of the process and GEFinalize after the last one, reference-counted like AclLibrary's aclInit. GE
// keeps one set of global options per process (hicann/ge 8.5.0 docs/graph_engine_api/GEInitialize.md),
// so a later model must ask for the same ones. Callers hold an aclInit share and have set the device
// first: that is the documented call order (aclInit -> aclrtSetDevice -> GEInitialize).
// A conversion (aclgrphBuildInitialize .. aclgrphBuildFinalize) cannot share the process with loaded
// models: aclgrphBuildFinalize finalises GE's GELib whenever it is initialised (hicann/ge 8.5.0
// compiler/api/aclgrph/ge_ir_build.cc), under the sessions of those models. So a conversion is
// refused while a model is loaded, and a load waits until a running conversion has finished.
#ifndef SERVE_FN_NPU_GE_ENVIRONMENT_H
#define SERVE_FN_NPU_GE_ENVIRONMENT_H

#include <napi.h>

#include "ge-api.h"

#include "acl-library.h"
#include "ge-options.h"
#include "loaded-model.h"
#include "npu-status.h"

class GeEnvironment {
 public:
  // A model's share of GE: waits for a running conversion, then GEInitialize for the first share.
  static NpuStatus Acquire(const StringOptions &globalOptions);
  static NpuStatus Release();

  // The whole of one conversion: refused while a model holds a share; conversions run one at a
  // time, as aclgrphBuildInitialize allows one build environment per process.
  static NpuStatus BeginConversion();
  static void EndConversion();

  // The AscendCL the build-time CANN home's GE libraries use: the addon's default for GE models.
  static std::string AclDirectory();
  // The addon binds AscendCL with dlopen (AclLibrary) while the GE libraries got theirs from the
  // dynamic linker when the addon loaded; two copies in one process would each keep their own
  // devices, contexts and streams, and GE would run on a stream its AscendCL never made. Refuses
  // a library that is not the very copy the GE libraries use, naming both paths.
  static NpuStatus CheckSameAscendCl(const AclLibrary &library);

  // aclgrphParseONNX (a file) or aclgrphParseONNXFromMem (bytes). GE's ONNX parser keeps
  // process-wide state, so every parse of the process, loads' and conversions', runs under one
  // mutex, as Huawei's Triton GE backend parses under a lock (src/model_instance_state.cpp, ParseGraph).
  static NpuStatus ParseOnnx(const ModelSource &source, const StringOptions &parserOptions, ge::Graph *graph);
};

// geInfo(): { cannHome, headers } — what this addon was built against.  [sync]
Napi::Value GeInfo(const Napi::CallbackInfo &info);

#endif

// GE's process-wide state: GEInitialize once for the first GE model of the process and GEFinalize
// after the last one, reference-counted like AclLibrary's aclInit. GE keeps one set of global
// options per process (hicann/ge 8.5.0 docs/graph_engine_api/GEInitialize.md), so a later model
// must ask for the same ones. Callers hold an aclInit share and have set the device first: that is
// the documented call order (aclInit -> aclrtSetDevice -> GEInitialize).
#ifndef SERVE_FN_NPU_GE_ENVIRONMENT_H
#define SERVE_FN_NPU_GE_ENVIRONMENT_H

#include <napi.h>

#include "ge-options.h"
#include "npu-status.h"

class GeEnvironment {
 public:
  static NpuStatus Acquire(const StringOptions &globalOptions);
  static NpuStatus Release();
};

// geInfo(): { cannHome, headers } — what this addon was built against.  [sync]
Napi::Value GeInfo(const Napi::CallbackInfo &info);

#endif

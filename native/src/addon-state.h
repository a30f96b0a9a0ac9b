// Per-environment addon state (one per main thread or worker_thread that loads the addon), freed
// by a cleanup hook registered in addon.cc. Process-wide ACL state lives in AclLibrary instead.
#ifndef SERVE_FN_NPU_ADDON_STATE_H
#define SERVE_FN_NPU_ADDON_STATE_H

#include <napi.h>

struct AddonState {
  Napi::FunctionReference omModelConstructor;
#ifdef SERVE_FN_WITH_GE
  Napi::FunctionReference geModelConstructor;
#endif
};

#endif

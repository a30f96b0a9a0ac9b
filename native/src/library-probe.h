// probeLibrary(libraryPath?: string): { found, path?, variant?, tried } -- [sync] dlopen only;
// no aclInit, no device access, so it is cheap enough for Backend.available().
#ifndef SERVE_FN_NPU_LIBRARY_PROBE_H
#define SERVE_FN_NPU_LIBRARY_PROBE_H

#include <napi.h>

Napi::Value ProbeLibrary(const Napi::CallbackInfo &info);

#endif

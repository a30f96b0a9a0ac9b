#include "ge-environment.h"

#include <mutex>

#include "ge-api.h"
#include "ge-status.h"

namespace {

// Process-wide on purpose and never destroyed, as AclLibrary's cache: every worker thread's addon
// instance shares the one GE of the process.
struct Shared {
  std::mutex mutex;
  int holders = 0;
  StringOptions globalOptions;
};

Shared &State() {
  static auto *state = new Shared();
  return *state;
}

// The first key on which the two option sets differ, or "".
std::string DifferentKey(const StringOptions &a, const StringOptions &b) {
  for (const auto &entry : a) {
    auto other = b.find(entry.first);
    if (other == b.end() || other->second != entry.second) return entry.first;
  }
  for (const auto &entry : b) {
    if (a.find(entry.first) == a.end()) return entry.first;
  }
  return "";
}

std::string Quoted(const StringOptions &options, const std::string &key) {
  auto found = options.find(key);
  return found == options.end() ? "unset" : "\"" + found->second + "\"";
}

}  // namespace

NpuStatus GeEnvironment::Acquire(const StringOptions &globalOptions) {
  Shared &state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.holders > 0) {
    std::string key = DifferentKey(globalOptions, state.globalOptions);
    if (!key.empty()) {
      return NpuStatus::Failure("GE global option " + key + " is " + Quoted(globalOptions, key) +
                                " but GE was initialised in this process with " + Quoted(state.globalOptions, key) +
                                ": GEInitialize takes one set of global options per process");
    }
  } else {
    NpuStatus status = GE_CALL(GEInitialize, (ToGeOptions(globalOptions)));
    if (!status.ok) return status;
    state.globalOptions = globalOptions;
  }
  state.holders++;
  return NpuStatus::Ok();
}

NpuStatus GeEnvironment::Release() {
  Shared &state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (--state.holders > 0) return NpuStatus::Ok();
  state.globalOptions.clear();
  return GE_CALL(GEFinalize, ());
}

Napi::Value GeInfo(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object object = Napi::Object::New(env);
  object.Set("cannHome", Napi::String::New(env, SERVE_FN_CANN_HOME));
  object.Set("headers", Napi::String::New(env, ge::kHeadersVersion));
  return object;
}

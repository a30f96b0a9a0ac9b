#include "ge-environment.h"

#include <dlfcn.h>

#include <condition_variable>
#include <mutex>
#include <string>

#include "ge-api.h"
#include "ge-status.h"

namespace {

// Process-wide on purpose and never destroyed, as AclLibrary's cache: every worker thread's addon
// instance shares the one GE of the process.
struct Shared {
  std::mutex mutex;
  std::condition_variable converted;  // signalled when a conversion ends
  int holders = 0;
  bool converting = false;
  StringOptions globalOptions;
  std::mutex parse;
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
  std::unique_lock<std::mutex> lock(state.mutex);
  state.converted.wait(lock, [&state] { return !state.converting; });
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

NpuStatus GeEnvironment::BeginConversion() {
  Shared &state = State();
  std::unique_lock<std::mutex> lock(state.mutex);
  state.converted.wait(lock, [&state] { return !state.converting; });
  if (state.holders > 0) {
    return NpuStatus::Failure("cannot convert while " + std::to_string(state.holders) +
                              " GE model(s) are loaded in this process: aclgrphBuildFinalize would finalise GE under their "
                              "sessions; unload them first, or convert in another process (serve-fn convert)");
  }
  state.converting = true;
  return NpuStatus::Ok();
}

void GeEnvironment::EndConversion() {
  Shared &state = State();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.converting = false;
  }
  state.converted.notify_all();
}

std::string GeEnvironment::AclDirectory() { return std::string(SERVE_FN_CANN_HOME) + "/lib64"; }

NpuStatus GeEnvironment::CheckSameAscendCl(const AclLibrary &library) {
  // The libraries were linked against <cann>/lib64 (binding.gyp); RTLD_NOLOAD finds that file only
  // if it is already mapped, which the GE libraries' NEEDED entry did when it resolved there.
  std::string geAcl = AclDirectory() + "/libascendcl.so";
  void *handle = dlopen(geAcl.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  void *geInit = handle ? dlsym(handle, "aclInit") : nullptr;
  if (handle) dlclose(handle);  // drops only the reference NOLOAD added
  Dl_info bound{}, ge{};
  bool same = geInit && dladdr(reinterpret_cast<void *>(library.api().aclInit), &bound) && dladdr(geInit, &ge) &&
              bound.dli_fbase == ge.dli_fbase;
  if (same) return NpuStatus::Ok();
  return NpuStatus::Failure("the AscendCL this addon bound (" + library.path() + ") is not the one the GE libraries use (" +
                            geAcl + (geInit ? "" : ", not loaded in this process") +
                            "): two AscendCL copies in one process do not share devices or streams; name " + AclDirectory() +
                            " as the AscendCL library, or leave it unset");
}

NpuStatus GeEnvironment::ParseOnnx(const ModelSource &source, const StringOptions &parserOptions, ge::Graph *graph) {
  ge::Options options = ToGeOptions(parserOptions);
  std::lock_guard<std::mutex> lock(State().parse);
  return source.file.empty()
             ? GE_CALL(aclgrphParseONNXFromMem,
                       (reinterpret_cast<const char *>(source.bytes.data()), source.bytes.size(), options, *graph))
             : GE_CALL(aclgrphParseONNX, (source.file.c_str(), options, *graph));
}

Napi::Value GeInfo(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object object = Napi::Object::New(env);
  object.Set("cannHome", Napi::String::New(env, SERVE_FN_CANN_HOME));
  object.Set("headers", Napi::String::New(env, ge::kHeadersVersion));
  return object;
}

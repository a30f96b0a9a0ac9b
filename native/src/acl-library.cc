#include "acl-library.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

namespace {

struct Candidate {
  std::string primary;    // libascendcl.so, or libacl_rt.so of a split pair
  std::string secondary;  // libacl_mdl.so of a split pair; empty otherwise
  std::string label;
};

Candidate Single(const std::string &file) { return {file, "", file}; }

Candidate Split(const std::string &dir) {
  std::string prefix = dir.empty() ? "" : dir + "/";
  return {prefix + "libacl_rt.so", prefix + "libacl_mdl.so", prefix + "libacl_rt.so + " + prefix + "libacl_mdl.so"};
}

std::vector<std::string> SearchDirectories() {
  std::vector<std::string> dirs;
  auto add = [&dirs](const std::string &dir) {
    if (!dir.empty() && std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  };
  if (const char *home = std::getenv("ASCEND_HOME_PATH")) add(std::string(home) + "/lib64");
  if (const char *paths = std::getenv("LD_LIBRARY_PATH")) {
    std::string rest = paths;
    for (size_t colon; (colon = rest.find(':')) != std::string::npos; rest.erase(0, colon + 1)) add(rest.substr(0, colon));
    add(rest);
  }
  return dirs;
}

std::vector<Candidate> Candidates(const std::string &explicitPath) {
  if (!explicitPath.empty()) {
    struct stat info;
    bool isDirectory = stat(explicitPath.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
    if (isDirectory) return {Single(explicitPath + "/libascendcl.so"), Split(explicitPath)};
    size_t slash = explicitPath.rfind('/');
    std::string dir = slash == std::string::npos ? "." : explicitPath.substr(0, slash);
    std::string base = explicitPath.substr(slash == std::string::npos ? 0 : slash + 1);
    if (base == "libacl_rt.so" || base == "libacl_mdl.so") return {Split(dir)};
    return {Single(explicitPath)};
  }
  std::vector<std::string> dirs = SearchDirectories();
  std::vector<Candidate> candidates;
  for (const std::string &dir : dirs) candidates.push_back(Single(dir + "/libascendcl.so"));
  candidates.push_back(Single("libascendcl.so"));
  for (const std::string &dir : dirs) candidates.push_back(Split(dir));
  candidates.push_back(Split(""));
  return candidates;
}

void *Lookup(void *first, void *second, const char *name) {
  void *symbol = dlsym(first, name);
  return symbol || !second ? symbol : dlsym(second, name);
}

// Binds every function; returns the first required one that is missing, or "".
std::string Bind(void *first, void *second, AclApi *api) {
#define SERVE_FN_BIND_REQUIRED(name, ret, params)                                      \
  api->name = reinterpret_cast<ret(*) params>(Lookup(first, second, #name)); \
  if (!api->name) return #name;
#define SERVE_FN_BIND_OPTIONAL(name, ret, params) \
  api->name = reinterpret_cast<ret(*) params>(Lookup(first, second, #name));
  SERVE_FN_ACL_REQUIRED_FUNCTIONS(SERVE_FN_BIND_REQUIRED)
  SERVE_FN_ACL_OPTIONAL_FUNCTIONS(SERVE_FN_BIND_OPTIONAL)
#undef SERVE_FN_BIND_REQUIRED
#undef SERVE_FN_BIND_OPTIONAL
  return "";
}

// Process-wide on purpose, and never destroyed: ACL state (aclInit, devices) belongs to the
// process, while each worker thread has its own addon instance. Libraries are never dlclose'd
// because the runtime starts threads and registers exit handlers that must stay mapped.
std::mutex &CacheMutex() {
  static auto *mutex = new std::mutex();
  return *mutex;
}

std::map<std::pair<void *, void *>, std::shared_ptr<AclLibrary>> &Cache() {
  static auto *cache = new std::map<std::pair<void *, void *>, std::shared_ptr<AclLibrary>>();
  return *cache;
}

std::string DlError() {
  const char *error = dlerror();
  return error ? error : "unknown dlopen error";
}

}  // namespace

NpuStatus AclLibrary::OpenResult::NotFound() const {
  std::string lines;
  for (const std::string &line : tried) lines += (lines.empty() ? "" : "; ") + line;
  return NpuStatus::Failure("AscendCL library not found; tried: " + lines);
}

AclLibrary::AclLibrary(AclApi api, std::string path, std::string variant)
    : api_(api), path_(std::move(path)), variant_(std::move(variant)) {}

AclLibrary::OpenResult AclLibrary::Open(const std::string &explicitPath) {
  OpenResult result;
  std::lock_guard<std::mutex> lock(CacheMutex());
  for (const Candidate &candidate : Candidates(explicitPath)) {
    void *first = dlopen(candidate.primary.c_str(), RTLD_NOW | RTLD_LOCAL);
    void *second = first && !candidate.secondary.empty() ? dlopen(candidate.secondary.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!first || (!candidate.secondary.empty() && !second)) {
      result.tried.push_back(DlError());
      if (first) dlclose(first);
      continue;
    }
    auto key = std::make_pair(first, second);
    auto cached = Cache().find(key);
    if (cached != Cache().end()) {
      result.library = cached->second;
      return result;
    }
    AclApi api;
    std::string missing = Bind(first, second, &api);
    if (!missing.empty()) {
      result.tried.push_back(candidate.label + ": missing symbol " + missing);
      if (second) dlclose(second);
      dlclose(first);
      continue;
    }
    result.library = std::make_shared<AclLibrary>(api, candidate.label, second ? "split" : "ascendcl");
    Cache()[key] = result.library;
    return result;
  }
  return result;
}

NpuStatus AclLibrary::AcquireInit() {
  std::lock_guard<std::mutex> lock(initMutex_);
  if (initHolders_ == 0) {
    aclError code = api_.aclInit(nullptr);
    // Another component of the process may have initialised ACL already (CANN AscendCL API reference); then
    // finalising stays that component's job.
    if (code != ACL_ERROR_REPEAT_INITIALIZE) {
      NpuStatus status = AclCheck(api_, code, "aclInit");
      if (!status.ok) return status;
    }
    ownsInit_ = code == ACL_SUCCESS;
  }
  initHolders_++;
  return NpuStatus::Ok();
}

NpuStatus AclLibrary::ReleaseInit() {
  std::lock_guard<std::mutex> lock(initMutex_);
  if (--initHolders_ > 0 || !ownsInit_) return NpuStatus::Ok();
  return ACL_CALL(api_, aclFinalize, ());
}

// Finds and binds the AscendCL shared library at run time (dlopen + dlsym), so the addon loads on
// machines without CANN and reports what it tried. Classic installs ship everything in
// libascendcl.so; CANN 9 splits it into libacl_rt.so + libacl_mdl.so (CANN AscendCL API reference, library layout).
#ifndef SERVE_FN_NPU_ACL_LIBRARY_H
#define SERVE_FN_NPU_ACL_LIBRARY_H

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "acl-api.h"
#include "npu-status.h"

class AclLibrary {
 public:
  struct OpenResult {
    std::shared_ptr<AclLibrary> library;  // null when nothing usable was found
    std::vector<std::string> tried;       // one line per failed candidate, in search order

    NpuStatus NotFound() const;
  };

  // explicitPath: a library file or a directory to use instead of the search; empty to search
  // ASCEND_HOME_PATH/lib64, each LD_LIBRARY_PATH entry, then the system's library path.
  // The same library always yields the same object, so every caller shares one aclInit refcount.
  static OpenResult Open(const std::string &explicitPath);

  AclLibrary(AclApi api, std::string path, std::string variant);

  const AclApi &api() const { return api_; }
  const std::string &path() const { return path_; }
  const std::string &variant() const { return variant_; }

  // aclInit runs once per process for the first holder; aclFinalize when the last one releases.
  NpuStatus AcquireInit();
  NpuStatus ReleaseInit();

 private:
  const AclApi api_;
  const std::string path_;
  const std::string variant_;  // "ascendcl" or "split"
  std::mutex initMutex_;
  int initHolders_ = 0;
  bool ownsInit_ = false;
};

#endif

{
  "targets": [
    {
      "target_name": "serve_fn_npu",
      "sources": [
        "src/acl-library.cc",
        "src/addon.cc",
        "src/describe-devices-worker.cc",
        "src/device-runtime.cc",
        "src/execute-worker.cc",
        "src/js-arguments.cc",
        "src/library-probe.cc",
        "src/load-worker.cc",
        "src/loaded-model.cc",
        "src/model-description.cc",
        "src/npu-status.cc",
        "src/om-model.cc",
        "src/shared-memory.cc",
        "src/unload-worker.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"],
      "libraries": ["-ldl"]
    }
  ]
}

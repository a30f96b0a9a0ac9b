{
  "variables": {
    # A CANN toolkit to build serve_fn_npu_ge against; empty without one (find-cann-home.cjs).
    "cann_home": "<!(node find-cann-home.cjs)",
    "addon_sources": [
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
      "src/promise-worker.cc",
      "src/unload-worker.cc"
    ],
    "addon_defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
    "addon_cflags": ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"]
  },
  "targets": [
    {
      "target_name": "serve_fn_npu",
      "sources": ["<@(addon_sources)"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["<@(addon_defines)"],
      "cflags_cc": ["<@(addon_cflags)"],
      "libraries": ["-ldl"]
    }
  ],
  "conditions": [
    ["cann_home!=''", {
      "targets": [
        {
          # The same addon plus the GE route. GE's entry points are C++ with standard-library
          # types and CANN is built with the old libstdc++ ABI, so every file of this target is
          # too, and it links CANN's libraries at build time (AscendCL stays dlopen'd).
          "target_name": "serve_fn_npu_ge",
          "sources": [
            "<@(addon_sources)",
            "src/ge-convert-worker.cc",
            "src/ge-environment.cc",
            "src/ge-execute-worker.cc",
            "src/ge-load-worker.cc",
            "src/ge-loaded-graph.cc",
            "src/ge-model.cc",
            "src/ge-options.cc",
            "src/ge-status.cc",
            "src/ge-unload-worker.cc"
          ],
          "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
          # node's common.gypi defines _GLIBCXX_USE_CXX11_ABI=1; CANN's ABI replaces it.
          "defines!": ["_GLIBCXX_USE_CXX11_ABI=1"],
          "defines": ["<@(addon_defines)", "_GLIBCXX_USE_CXX11_ABI=0", "SERVE_FN_WITH_GE", "SERVE_FN_CANN_HOME=\"<(cann_home)\""],
          "cflags_cc": ["<@(addon_cflags)"],
          "libraries": [
            "-ldl",
            "-L<(cann_home)/lib64",
            "-Wl,-rpath,<(cann_home)/lib64",
            "-lge_runner",
            "-lgraph",
            "-lfmk_onnx_parser",
            "-lge_compiler"
          ]
        }
      ]
    }]
  ]
}

// Prints the CANN toolkit binding.gyp builds the GE addon against, or nothing: SERVE_FN_CANN_HOME,
// else ASCEND_HOME_PATH, when its lib64 holds all four GE libraries the target links. A partial
// toolkit (a runtime-only install without the compiler or the ONNX parser) must not break the
// plain addon's build, so it is skipped, and the reason goes to stderr, which gyp prints.
const { existsSync } = require('node:fs');
const { join, resolve } = require('node:path');

const GE_LIBRARIES = ['libge_runner.so', 'libgraph.so', 'libfmk_onnx_parser.so', 'libge_compiler.so'];

const variable = process.env.SERVE_FN_CANN_HOME ? 'SERVE_FN_CANN_HOME' : process.env.ASCEND_HOME_PATH ? 'ASCEND_HOME_PATH' : '';
const home = variable ? resolve(process.env[variable]) : '';
const missing = home ? GE_LIBRARIES.filter((library) => !existsSync(join(home, 'lib64', library))) : GE_LIBRARIES;
if (!home) {
  process.stderr.write('serve-fn: not building serve_fn_npu_ge: neither SERVE_FN_CANN_HOME nor ASCEND_HOME_PATH names a CANN toolkit\n');
} else if (missing.length > 0) {
  process.stderr.write(`serve-fn: not building serve_fn_npu_ge: ${variable}=${home} lacks lib64/${missing.join(', lib64/')}\n`);
}
process.stdout.write(home && missing.length === 0 ? home : '');

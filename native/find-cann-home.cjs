// Prints the CANN toolkit binding.gyp builds the GE addon against, or nothing: SERVE_FN_CANN_HOME,
// else ASCEND_HOME_PATH, when it holds lib64/libge_runner.so (the GE runtime the target links).
const { existsSync } = require('node:fs');
const { join, resolve } = require('node:path');

const home = process.env.SERVE_FN_CANN_HOME || process.env.ASCEND_HOME_PATH || '';
process.stdout.write(home && existsSync(join(home, 'lib64', 'libge_runner.so')) ? resolve(home) : '');

// `serve-fn dev` and `serve-fn start` serve every @Model class this file exports.
export { {{className}} } from './src/{{modelName}}.model.js';

// One small model for the footprint bench: issue 16's validated echo, as bench/overhead serves it,
// alone in its module so `serve-fn start` serves nothing else.
export { Echo } from '../overhead/echo-models.js';

export { Model } from './model.decorator.js';
export { Endpoint } from './endpoint.decorator.js';
export { Batch } from './batch.decorator.js';
export { Instances } from './instances.decorator.js';
export { WebSocketEndpoint } from './websocket-endpoint.decorator.js';
export { Tensors } from './tensors.decorator.js';
export { TextModel } from './text-model.decorator.js';
export { GenerativeModel } from './generative-model.decorator.js';

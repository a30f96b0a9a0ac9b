import { recordEndpoint } from '../metadata/reflection.js';
import type { EndpointOptions } from '../metadata/records.js';

/** Maps a method to an HTTP route (POST unless `options.method` says otherwise). */
export function Endpoint(path: string, options: EndpointOptions = {}): MethodDecorator {
  return (prototype, propertyKey, descriptor) => {
    // A decorated class field has no descriptor; SWC compiles that misuse without a type error.
    const member = descriptor?.value ?? descriptor?.get;
    recordEndpoint(prototype.constructor as new () => unknown, {
      method: String(propertyKey),
      path,
      options: { ...options },
      isFunction: typeof descriptor?.value === 'function',
      kindOfMember: typeof member,
    });
  };
}

// class-transformer ships no typings for this deep import, which class-validator-jsonschema needs to
// see @Type records; the shape comes from the package's own declaration of the same module.
declare module 'class-transformer/cjs/storage.js' {
  export { defaultMetadataStorage } from 'class-transformer/types/storage';
}

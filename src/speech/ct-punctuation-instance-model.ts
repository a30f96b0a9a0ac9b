/** The instance module of a CT-Transformer punctuation folder (module-executor.ts loads its default export). */
export { PunctuationInstanceModel as default } from './speech-chain-instances.js';

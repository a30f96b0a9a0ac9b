/** The instance module of an FSMN-VAD folder (module-executor.ts loads its default export). */
export { VadInstanceModel as default } from './speech-chain-instances.js';

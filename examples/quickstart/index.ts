export { CosyVoice } from './cosyvoice.js';

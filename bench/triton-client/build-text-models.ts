import { join } from 'node:path';
import { writeBertCrossEncoder, writeBertEncoder } from '../../test/fixtures/text/text-model-folders.js';

/** Writes the text model folders run.sh serves with TEXT=1: an embedder and a reranker of seeded weights. */
const root = process.argv[2];
if (!root) throw new Error('usage: build-text-models.ts <folder>');
writeBertEncoder(join(root, 'bge-tiny'), { pooling: 'cls', normalize: true });
writeBertCrossEncoder(join(root, 'rerank-tiny'));

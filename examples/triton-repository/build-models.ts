/**
 * Writes models/add_sub/1/model.onnx, Triton's classic `simple` model (OUTPUT0 = INPUT0 + INPUT1,
 * OUTPUT1 = INPUT0 - INPUT1, INT32 [batch, 16]), with serve-fn's ONNX builder. The file is
 * committed; run this again only to regenerate it:
 *
 *   node --import ./loader/register.mjs examples/triton-repository/build-models.ts
 */
import { writeFileSync } from 'node:fs';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';

const target = new URL('./models/add_sub/1/model.onnx', import.meta.url);
writeFileSync(target, buildAddSubModel({ datatype: 'INT32', size: 16 }));
process.stdout.write(`wrote ${target.pathname}\n`);

/**
 * Writes the model repository Triton's client examples run against into `target` (argv[2]): the
 * protocol fixtures `simple` (with its ONNX add/sub graph) and `simple_string`, and this folder's
 * `simple_identity`, `simple_sequence` and `repeat_int32`. The target sits as deep under the
 * repository root as the sources, so each model.ts keeps resolving its relative src import.
 */
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';

const target = process.argv[2];
if (!target) throw new Error('usage: build-repository.ts <target folder>');
const fixtures = fileURLToPath(new URL('../../test/fixtures/protocol-repository', import.meta.url));
cpSync(fixtures, target, { recursive: true });
cpSync(fileURLToPath(new URL('./repository', import.meta.url)), target, { recursive: true });
mkdirSync(join(target, 'simple/1'), { recursive: true });
writeFileSync(join(target, 'simple/1/model.onnx'), buildAddSubModel({ datatype: 'INT32', size: 16 }));

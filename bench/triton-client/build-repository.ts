/**
 * Writes a model repository Triton's client examples run against into `target` (argv[2]). The
 * target sits as deep under the repository root as the sources, so each model.ts keeps resolving
 * its relative src import.
 *
 * - `build-repository.ts <target>`: the protocol fixtures `simple` (with its ONNX add/sub graph)
 *   and `simple_string`, and this folder's `simple_identity`, `simple_sequence` and `repeat_int32`.
 * - `build-repository.ts <target> model-control <count>`: the first `count` models of Triton's
 *   docs/examples/model_repository, whose size simple_grpc_model_control.py (8) and
 *   simple_http_model_control.py (7) check in the repository index: `simple`, `simple_string`,
 *   `simple_identity` and `simple_sequence` as above, `simple_int8` (the add/sub graph on INT8),
 *   `simple_dyna_sequence` (simple_sequence under that name), then `densenet_onnx` and
 *   `inception_onnx` as config only, as Triton's checkout holds them until its fetch_models.sh
 *   downloads their ONNX files: the examples load `simple` alone.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';

const [target, mode, count] = process.argv.slice(2);
if (!target || (mode !== undefined && (mode !== 'model-control' || !(Number(count) >= 1)))) {
  throw new Error('usage: build-repository.ts <target folder> [model-control <number of models>]');
}
const fixtures = fileURLToPath(new URL('../../test/fixtures/protocol-repository', import.meta.url));
const own = fileURLToPath(new URL('./repository', import.meta.url));
const simpleConfig = readFileSync(join(fixtures, 'simple/config.pbtxt'), 'utf8');

const writeSimple = (): void => {
  cpSync(join(fixtures, 'simple'), join(target, 'simple'), { recursive: true });
  mkdirSync(join(target, 'simple/1'), { recursive: true });
  writeFileSync(join(target, 'simple/1/model.onnx'), buildAddSubModel({ datatype: 'INT32', size: 16 }));
};
const copy = (from: string, name: string): void => cpSync(join(from, name), join(target, name), { recursive: true });
const configOnly = (name: string): void => {
  mkdirSync(join(target, name), { recursive: true });
  writeFileSync(join(target, name, 'config.pbtxt'), `name: "${name}"\nplatform: "onnxruntime_onnx"\n`);
};

if (mode === undefined) {
  writeSimple();
  copy(fixtures, 'simple_string');
  cpSync(own, target, { recursive: true });
} else {
  const tritonExampleModels: Readonly<Record<string, () => void>> = {
    simple: writeSimple,
    simple_string: () => copy(fixtures, 'simple_string'),
    simple_identity: () => copy(own, 'simple_identity'),
    simple_sequence: () => copy(own, 'simple_sequence'),
    simple_int8: () => {
      mkdirSync(join(target, 'simple_int8/1'), { recursive: true });
      writeFileSync(join(target, 'simple_int8/config.pbtxt'), simpleConfig.replace('name: "simple"', 'name: "simple_int8"').replaceAll('TYPE_INT32', 'TYPE_INT8'));
      writeFileSync(join(target, 'simple_int8/1/model.onnx'), buildAddSubModel({ datatype: 'INT8', size: 16 }));
    },
    simple_dyna_sequence: () => {
      cpSync(join(own, 'simple_sequence'), join(target, 'simple_dyna_sequence'), { recursive: true });
      const config = join(target, 'simple_dyna_sequence/config.pbtxt');
      writeFileSync(config, readFileSync(config, 'utf8').replace('name: "simple_sequence"', 'name: "simple_dyna_sequence"'));
    },
    densenet_onnx: () => configOnly('densenet_onnx'),
    inception_onnx: () => configOnly('inception_onnx'),
  };
  const writers = Object.values(tritonExampleModels);
  if (Number(count) > writers.length) throw new Error(`Triton's example repository has ${writers.length} models, not ${count}`);
  for (const write of writers.slice(0, Number(count))) write();
}

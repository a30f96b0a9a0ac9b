import { describe, expect, it } from 'vitest';
import type { InferenceModelInfo } from '../../src/inference/inference-model.js';
import { planEnsemble } from '../../src/model-repository/ensemble-validation.js';
import type { EnsembleStep } from '../../src/model-repository/model-config.js';
import type { TensorSpec } from '../../src/spec/tensor.js';
import { thrown } from '../helpers/thrown.js';

function info(name: string, inputs: TensorSpec[], outputs: TensorSpec[], maxBatchSize = 8, version = '1'): InferenceModelInfo {
  return { name, version, platform: 'onnxruntime_onnx', inputs, outputs, maxBatchSize, config: {}, decoupled: false };
}
const int16 = (name: string): TensorSpec => ({ name, datatype: 'INT32', shape: [16] });

const models: Record<string, InferenceModelInfo> = {
  addsub: info('addsub', [int16('INPUT0'), int16('INPUT1')], [int16('OUTPUT0'), int16('OUTPUT1')]),
  double: info('double', [int16('X')], [int16('Y')]),
  floaty: info('floaty', [{ name: 'X', datatype: 'FP32', shape: [16] }], [{ name: 'Y', datatype: 'FP32', shape: [16] }]),
  wide: info('wide', [{ name: 'X', datatype: 'INT32', shape: [32] }], [int16('Y')]),
  flat: info('flat', [int16('X')], [int16('Y')], 0),
};
const lookup = (name: string, version?: string) => (version === undefined || version === '1' ? models[name] : undefined);
const ensemble = info('pipeline', [int16('A'), int16('B')], [int16('SUM_DOUBLED'), int16('DIFF')]);
const step = (model_name: string, input_map: Record<string, string>, output_map: Record<string, string>, model_version = -1): EnsembleStep => ({ model_name, model_version, input_map, output_map });

const GOOD = [
  step('addsub', { INPUT0: 'A', INPUT1: 'B' }, { OUTPUT0: 'sum', OUTPUT1: 'DIFF' }),
  step('double', { X: 'sum' }, { Y: 'SUM_DOUBLED' }, 1),
];

function why(steps: EnsembleStep[], of = ensemble): string {
  const err = thrown(() => planEnsemble(of, { step: steps, max_inflight_requests: 0 }, lookup));
  expect(err.code).toBe('SF_ERR_ENSEMBLE_INVALID');
  return err.message.replace("Ensemble 'pipeline' is invalid: ", '');
}

describe('planEnsemble', () => {
  it('plans the steps with their tensor maps and versions', () => {
    expect(planEnsemble(ensemble, { step: GOOD, max_inflight_requests: 0 }, lookup)).toEqual([
      { index: 0, modelName: 'addsub', modelVersion: undefined, inputs: [['INPUT0', 'A'], ['INPUT1', 'B']], outputs: [['OUTPUT0', 'sum'], ['OUTPUT1', 'DIFF']] },
      { index: 1, modelName: 'double', modelVersion: '1', inputs: [['X', 'sum']], outputs: [['Y', 'SUM_DOUBLED']] },
    ]);
  });

  it.each([
    ['no step', [], 'ensemble_scheduling has no step'],
    ['an unknown model', [step('nope', {}, {}), GOOD[1]], "step 0 (model 'nope') uses a model that is not loaded; load it before the ensemble"],
    ['a missing version', [GOOD[0], step('double', { X: 'sum' }, { Y: 'SUM_DOUBLED' }, 7)], "step 1 (model 'double') uses a model that is not loaded in version 7; load it before the ensemble"],
    ['an unknown step input', [step('addsub', { INPUT0: 'A', INPUT1: 'B', IN2: 'A' }, {}), GOOD[1]], "step 0 (model 'addsub') maps 'IN2', which is not an input of the model (inputs: INPUT0, INPUT1)"],
    ['an unmapped step input', [step('addsub', { INPUT0: 'A' }, {}), GOOD[1]], "step 0 (model 'addsub') leaves the model's input 'INPUT1' unmapped"],
    ['an unknown step output', [step('addsub', { INPUT0: 'A', INPUT1: 'B' }, { OUT: 'x' }), GOOD[1]], "step 0 (model 'addsub') maps 'OUT', which is not an output of the model (outputs: OUTPUT0, OUTPUT1)"],
    ['a tensor produced twice', [GOOD[0], step('double', { X: 'sum' }, { Y: 'DIFF' })], "tensor 'DIFF' is produced twice: by tensor 'DIFF' (step 0 (model 'addsub') output 'OUTPUT1') and by step 1 (model 'double') output 'Y'"],
    ['an input that is never produced', [GOOD[0], step('double', { X: 'nowhere' }, { Y: 'SUM_DOUBLED' })], "step 1 (model 'double') reads 'nowhere', which is neither an ensemble input nor an output of any step"],
    ['an output that is never produced', [GOOD[0]], "output 'SUM_DOUBLED' is never produced by any step"],
    ['a datatype mismatch', [GOOD[0], step('floaty', { X: 'sum' }, { Y: 'SUM_DOUBLED' })], "tensor 'sum' (step 0 (model 'addsub') output 'OUTPUT0') is INT32, but step 1 (model 'floaty') input 'X' expects FP32"],
    ['a shape mismatch', [GOOD[0], step('wide', { X: 'sum' }, { Y: 'SUM_DOUBLED' })], "tensor 'sum' (step 0 (model 'addsub') output 'OUTPUT0') has shape [-1,16], but step 1 (model 'wide') input 'X' expects [-1,32]"],
    ['a step without batching in a batching ensemble', [GOOD[0], step('flat', { X: 'sum' }, { Y: 'SUM_DOUBLED' })], "tensor 'sum' (step 0 (model 'addsub') output 'OUTPUT0') has shape [-1,16], but step 1 (model 'flat') input 'X' expects [16]"],
    ['a cycle', [
      step('addsub', { INPUT0: 'A', INPUT1: 'back' }, { OUTPUT0: 'sum', OUTPUT1: 'DIFF' }),
      step('double', { X: 'sum' }, { Y: 'back' }),
      step('double', { X: 'A' }, { Y: 'SUM_DOUBLED' }),
    ], "its steps form a cycle: step 0 (model 'addsub') → step 1 (model 'double') → step 0 (model 'addsub')"],
  ])('refuses %s', (_what, steps, reason) => {
    expect(why(steps)).toBe(reason);
  });

  it('refuses an ensemble without declared tensors', () => {
    expect(why(GOOD, info('pipeline', [], []))).toBe('declare its input and output tensors in config.pbtxt');
  });

  describe('an ensemble that runs itself', () => {
    /** A loaded ensemble, as the repository serves it: platform 'ensemble' and its steps in its configuration. */
    const loadedEnsemble = (name: string, steps: EnsembleStep[]): InferenceModelInfo => ({
      ...info(name, [int16('X')], [int16('Y')]),
      platform: 'ensemble',
      config: { name, platform: 'ensemble', ensemble_scheduling: { step: steps, max_inflight_requests: 0 } },
    });
    const selfStep = step('pipeline', { X: 'A' }, { Y: 'SUM_DOUBLED' });
    const plan = (steps: EnsembleStep[], loaded: Record<string, InferenceModelInfo>): string => {
      const all: Record<string, InferenceModelInfo> = { ...models, ...loaded };
      const err = thrown(() => planEnsemble(ensemble, { step: steps, max_inflight_requests: 0 }, (name) => all[name]));
      expect(err.code).toBe('SF_ERR_ENSEMBLE_INVALID');
      return err.message.replace("Ensemble 'pipeline' is invalid: ", '');
    };

    it('refuses a step naming the ensemble, even while an earlier version of it is loaded (a reload)', () => {
      const loaded = { pipeline: loadedEnsemble('pipeline', [step('double', { X: 'X' }, { Y: 'Y' })]) };
      expect(plan([selfStep], loaded)).toBe("step 0 (model 'pipeline') runs the ensemble itself");
    });

    it('refuses a cycle through another ensemble (a 2-cycle) and a longer one', () => {
      const twoCycle = { other: loadedEnsemble('other', [step('pipeline', { X: 'X' }, { Y: 'Y' })]) };
      expect(plan([GOOD[0], step('other', { X: 'sum' }, { Y: 'SUM_DOUBLED' })], twoCycle)).toBe(
        "step 1 (model 'other') runs the ensemble itself through 'other' → 'pipeline'",
      );
      const threeCycle = {
        first: loadedEnsemble('first', [step('double', { X: 'X' }, { Y: 'T' }), step('second', { X: 'T' }, { Y: 'Y' })]),
        second: loadedEnsemble('second', [step('pipeline', { X: 'X' }, { Y: 'Y' }, 1)]),
      };
      expect(plan([GOOD[0], step('first', { X: 'sum' }, { Y: 'SUM_DOUBLED' })], threeCycle)).toBe(
        "step 1 (model 'first') runs the ensemble itself through 'first' → 'second' → 'pipeline'",
      );
    });

    it('accepts ensembles of ensembles without a cycle, however they share steps', () => {
      const loaded = {
        inner: loadedEnsemble('inner', [step('double', { X: 'X' }, { Y: 'Y' })]),
        outer: loadedEnsemble('outer', [step('inner', { X: 'X' }, { Y: 'T' }), step('inner', { X: 'T' }, { Y: 'Y' })]),
      };
      const all: Record<string, InferenceModelInfo> = { ...models, ...loaded };
      expect(() => planEnsemble(ensemble, { step: [GOOD[0], step('outer', { X: 'sum' }, { Y: 'SUM_DOUBLED' })], max_inflight_requests: 0 }, (name) => all[name])).not.toThrow();
    });
  });
});

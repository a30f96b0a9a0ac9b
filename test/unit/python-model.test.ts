import { mkdirSync, symlinkSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../src/model-repository/model-config.js';
import { stubEnvironment } from '../../src/model-repository/python-model.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { thrown } from '../helpers/thrown.js';

const configWith = (parameters: Record<string, string>) =>
  parseModelConfig(`name: "m"\nbackend: "python"\n${Object.entries(parameters).map(([k, v]) => `parameters { key: "${k}" value { string_value: "${v}" } }`).join('\n')}`, 'config.pbtxt', 'm').config;

describe('stubEnvironment', () => {
  it('runs python3 from PATH by default', () => {
    expect(stubEnvironment(configWith({}), '/models/m')).toEqual({ interpreter: 'python3', env: {} });
  });

  it('takes PYTHON_INTERPRETER, relative to the model folder', () => {
    expect(stubEnvironment(configWith({ PYTHON_INTERPRETER: 'env/bin/python3' }), '/models/m').interpreter).toBe('/models/m/env/bin/python3');
    expect(stubEnvironment(configWith({ PYTHON_INTERPRETER: '/opt/py/bin/python3' }), '/models/m').interpreter).toBe('/opt/py/bin/python3');
  });

  it("runs EXECUTION_ENV_PATH's bin/python3 with its bin first on PATH, $$TRITON_MODEL_DIRECTORY being the model folder", () => {
    const dir = scratchFolder('python-env');
    mkdirSync(join(dir, 'env', 'bin'), { recursive: true });
    symlinkSync('/usr/bin/env', join(dir, 'env', 'bin', 'python3'));
    const found = stubEnvironment(configWith({ EXECUTION_ENV_PATH: '$$TRITON_MODEL_DIRECTORY/env' }), dir);
    expect(found.interpreter).toBe(join(dir, 'env', 'bin', 'python3'));
    expect(found.env.PATH?.split(delimiter)[0]).toBe(join(dir, 'env', 'bin'));
  });

  it('refuses an archive or a folder without bin/python3', () => {
    expect(thrown(() => stubEnvironment(configWith({ EXECUTION_ENV_PATH: "env.tar.gz" }), "/models/m")).message).toContain('is an archive');
    expect(thrown(() => stubEnvironment(configWith({ EXECUTION_ENV_PATH: "/nowhere" }), "/models/m")).message).toContain("EXECUTION_ENV_PATH '/nowhere' has no bin/python3");
  });
});

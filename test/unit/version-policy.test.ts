import { describe, expect, it } from 'vitest';
import { selectVersions } from '../../src/model-repository/version-policy.js';

describe('selectVersions', () => {
  it('serves the newest N, all, or the listed versions', () => {
    expect(selectVersions('m', { latest: { num_versions: 1 } }, [3, 1, 2])).toEqual([3]);
    expect(selectVersions('m', { latest: { num_versions: 2 } }, [3, 1, 10])).toEqual([3, 10]);
    expect(selectVersions('m', { latest: { num_versions: 5 } }, [2, 1])).toEqual([1, 2]);
    expect(selectVersions('m', { all: {} }, [2, 1, 3])).toEqual([1, 2, 3]);
    expect(selectVersions('m', { specific: { versions: [3, 1, 3] } }, [1, 2, 3])).toEqual([1, 3]);
  });

  it('refuses a policy the folders cannot meet', () => {
    expect(() => selectVersions('m', { specific: { versions: [1, 4] } }, [1, 2])).toThrow(
      "Model configuration for 'm' is invalid: version_policy specific asks for version 4, but the model folder has versions 1, 2",
    );
    expect(() => selectVersions('m', { specific: { versions: [] } }, [1])).toThrow('version_policy specific lists no versions');
    expect(() => selectVersions('m', { latest: { num_versions: 0 } }, [1])).toThrow('version_policy latest needs num_versions >= 1');
  });
});

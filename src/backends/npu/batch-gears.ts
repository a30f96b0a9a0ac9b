/**
 * How the NPU sessions cut a batch's rows. A model compiled for batch gears (an OM's dynamic batch
 * sizes, a GE graph's ge.dynamicDims or static batch) runs only at those sizes: both sessions pick
 * the gear a number of rows runs at here. The OM path refuses more rows than its largest gear and
 * leaves the padding to the addon, which owns the OM's input buffers (native/src/loaded-model.cc); the
 * GE path pads in TypeScript and cuts larger batches into executions of at most the largest gear.
 */

/** The smallest gear that holds `rows`; `rows` itself for a model without gears; undefined above the largest gear. */
export function gearFor(gears: readonly number[] | undefined, rows: number): number | undefined {
  if (!gears || gears.length === 0) return rows;
  return [...gears].sort((a, b) => a - b).find((gear) => gear >= rows);
}

/**
 * Rows per part when `total` rows are spread over `parts` parts: the same count each, the first
 * `total % parts` parts one more (Huawei's Triton GE backend, src/inference.cpp,
 * Inference::CalculateBatchDistribution).
 */
export function distributeRows(total: number, parts: number): number[] {
  const base = Math.floor(total / parts);
  const remainder = total % parts;
  return Array.from({ length: parts }, (_, i) => base + (i < remainder ? 1 : 0));
}

/** `rows` cut into as few executions of at most the largest gear as hold them, as even as distributeRows makes them; one without gears. */
export function executionRows(rows: number, gears: readonly number[] | undefined): number[] {
  const largest = gears && gears.length > 0 ? Math.max(...gears) : rows;
  return distributeRows(rows, Math.max(1, Math.ceil(rows / largest)));
}

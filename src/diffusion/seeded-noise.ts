/**
 * The initial latents of a request with a `seed`: standard normal float32 values from a documented
 * generator, so an image is reproducible across runs and machines (not across other servers:
 * torch's Philox/MT19937 streams are not reproduced). The generator is xoshiro128** (Blackman and
 * Vigna, https://prng.di.unimi.it/xoshiro128starstar.c) seeded by SplitMix32 of the seed, and the
 * normals come from the Box–Muller transform, both uniforms in (0, 1] from the top 24 bits.
 * Hand-written: it is a dozen lines, and a library would have to guarantee the same stream for ever.
 */
export function seededNormal(seed: number, count: number): Float32Array {
  const state = new Uint32Array(4);
  let s = seed >>> 0;
  let high = Math.floor(seed / 2 ** 32) >>> 0;
  for (let i = 0; i < 4; i++) {
    // SplitMix32 over the seed's low then high 32 bits.
    s = (s + 0x9e3779b9 + high) >>> 0;
    high = 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    state[i] = (z ^ (z >>> 16)) >>> 0;
  }
  if (state.every((v) => v === 0)) state[0] = 1;
  const next = (): number => {
    const result = Math.imul(rotl(Math.imul(state[1], 5), 7), 9) >>> 0;
    const t = state[1] << 9;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= t;
    state[3] = rotl(state[3], 11);
    return result;
  };
  const uniform = (): number => ((next() >>> 8) + 1) / 2 ** 24;
  const out = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    const radius = Math.sqrt(-2 * Math.log(uniform()));
    const angle = 2 * Math.PI * uniform();
    out[i] = radius * Math.cos(angle);
    if (i + 1 < count) out[i + 1] = radius * Math.sin(angle);
  }
  return out;
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

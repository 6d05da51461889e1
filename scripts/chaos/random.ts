/**
 * X5 (v5): every choice of the chaos run (which fault, when, which customer does what) comes from
 * one seeded generator, so a run's report names its seed. The workload also depends on how fast
 * the machine answers, so a seed repeats the choices, not the run.
 */
let state = 0;

/** mulberry32: small, fast and well spread for a 32-bit seed. */
export function random(): number {
  state = (state + 0x6d2b79f5) | 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

export function seedRandom(seed: number): void {
  state = seed | 0;
}

export const pick = <T>(list: T[]): T => list[Math.floor(random() * list.length)];

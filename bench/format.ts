/** How figures read in the bench's markdown tables. */
export const ms = (value: number) => (Number.isNaN(value) ? "-" : value.toFixed(2));
export const x = (value: number) => `${value.toFixed(2)}×`;
export const verdict = (ok: boolean) => (ok ? "met" : "**missed**");
/** A ratio's median and each round's, e.g. "0.81× (0.79, 0.81, 0.84)". */
export const ratio = (median: number, each: number[]) =>
  `${x(median)} (${each.map((v) => v.toFixed(2)).join(", ")})`;

import { h } from "./dom";

const fractionDigits = (currency: string) =>
  new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions()
    .maximumFractionDigits ?? 2;

/** An amount in minor units, in its currency as the viewer's locale writes it (1999 USD: $19.99). */
export function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(
      amount / 10 ** fractionDigits(currency),
    );
  } catch {
    return `${amount} ${currency} (minor units)`;
  }
}

const local = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/** A time in the viewer's zone; its UTC form on hover (title) and for machines (datetime). */
export function time(iso: string | null | undefined) {
  if (!iso) return h("span", { class: "muted" }, "—");
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return h("span", {}, iso);
  return h(
    "time",
    { datetime: at.toISOString(), title: `${at.toISOString()} (UTC)` },
    local.format(at),
  );
}

/** A status as a badge; its colour comes from the status, its meaning from the text. */
export const badge = (status: string) => h("span", { class: `badge badge-${status}` }, status);

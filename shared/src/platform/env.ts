import {
  FormatRegistry,
  Kind,
  OptionalKind,
  type Static,
  type TLiteral,
  type TObject,
  type TSchema,
  type TUnion,
  Type,
} from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

export type Env = Record<string, string | undefined>;

/** A bad or missing setting; main prints its message as the one line and exits. */
export class ConfigError extends Error {}

/**
 * What every variable of a service's environment schema says about itself: what it is for, what
 * its text must be (the words after "NAME must be" in the error), and whether its text is a
 * secret the error must not repeat.
 */
type About = { description?: string; expected?: string; secret?: boolean };

const words: Record<string, boolean> = { 1: true, true: true, yes: true, on: true };
for (const word of ["0", "false", "no", "off"]) words[word] = false;

/**
 * The kinds of variable an environment schema is built from: each is a TypeBox schema (type,
 * range, default, description) with the text of its one-line error.
 */
export const Var = {
  text: (about: About & { default?: string; pattern?: string; minLength?: number } = {}) =>
    Type.String(about),

  integer: ({
    minimum = 0,
    maximum = Number.MAX_SAFE_INTEGER,
    ...about
  }: About & { default?: number; minimum?: number; maximum?: number }) =>
    Type.Integer({
      minimum,
      maximum,
      expected: `an integer from ${minimum} to ${maximum}`,
      ...about,
    }),

  /** 1/0, true/false, yes/no, on/off, in any case. */
  boolean: (about: About & { default?: boolean }) =>
    Type.Boolean({ default: false, expected: "true or false", ...about }),

  /** One of a few words, in any case. */
  oneOf: <const T extends readonly string[]>(values: T, about: About & { default?: T[number] }) =>
    Type.Union(
      values.map((value) => Type.Literal(value)),
      { expected: `one of ${values.join(", ")}`, ...about },
    ) as TUnion<TLiteral<T[number]>[]>,

  /** An absolute URL whose scheme is one of `protocols` (e.g. "https:"). */
  url(protocols: string[], about: About & { default?: string } = {}) {
    const format = `url(${protocols.join(",")})`;
    FormatRegistry.Set(
      format,
      (text) => URL.canParse(text) && protocols.includes(new URL(text).protocol),
    );
    return Type.String({
      format,
      expected: `a URL starting with ${protocols.join(" or ")}`,
      ...about,
    });
  },

  /** A web origin: http(s), host and port, nothing after (what CORS compares). */
  origin(about: About = {}) {
    FormatRegistry.Set(
      "origin",
      (text) =>
        URL.canParse(text) &&
        ["http:", "https:"].includes(new URL(text).protocol) &&
        new URL(text).origin === text,
    );
    return Type.String({
      format: "origin",
      expected: "an origin such as https://shop.example.com",
      ...about,
    });
  },

  /**
   * A comma-separated list. `each` names an item, so an item that fails its own schema is told as
   * "NAME: each <item> must be ..."; anything else (an empty entry, too many) by `expected`.
   */
  list: <T extends TSchema>(
    item: T,
    about: About & { default?: Static<T>[]; maxItems?: number; each?: string },
  ) => Type.Array(item, { minItems: 1, ...about }),

  optional: Type.Optional,
};

/** The value a variable's trimmed, non-empty text stands for; text that does not fit stays text. */
function fromText(schema: TSchema, text: string): unknown {
  switch (schema[Kind]) {
    case "Integer":
      return /^\d+$/.test(text) ? Number(text) : text;
    case "Boolean":
      return words[text.toLowerCase()] ?? text;
    case "Array":
      return text.split(",").map((item) => fromText(schema.items, item.trim()));
    case "Union": {
      const lower = text.toLowerCase();
      const fits = (schema.anyOf as TSchema[])
        .map((member) => fromText(member, lower))
        .find((value, i) => Value.Check(schema.anyOf[i], value));
      return fits ?? text;
    }
    default:
      return text;
  }
}

/** The one line that says what is wrong with a variable's text, repeating it unless secret. */
function problem(name: string, schema: TSchema, text: string, value: unknown): string {
  const got = schema.secret ? "" : `, got "${text}"`;
  if (schema[Kind] === "Array" && schema.each && Array.isArray(value)) {
    const item = value.find((entry) => entry !== "" && !Value.Check(schema.items, entry));
    if (item !== undefined) return `${name}: each ${schema.each} must be ${schema.items.expected}`;
  }
  return `${name} must be ${schema.expected ?? `a ${String(schema[Kind]).toLowerCase()}`}${got}`;
}

/**
 * The environment as `schema` describes it: each property is one variable. Unset or blank, it
 * takes its default, stays undefined if optional, or stops the service as required; set, its
 * trimmed text becomes the schema's type and must pass the schema's checks. The first variable
 * that fails is the one-line ConfigError.
 */
export function parseEnv<T extends TObject>(schema: T, env: Env): Static<T> {
  const values: Record<string, unknown> = {};
  for (const [name, variable] of Object.entries<TSchema>(schema.properties)) {
    const text = env[name]?.trim();
    if (text === undefined || text === "") {
      if (variable.default === undefined && variable[OptionalKind] !== "Optional")
        throw new ConfigError(`${name} is required but not set`);
      continue;
    }
    const value = fromText(variable, text);
    if (!Value.Check(variable, value)) throw new ConfigError(problem(name, variable, text, value));
    values[name] = value;
  }
  return Value.Default(schema, values) as Static<T>;
}

import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { ConfigError, parseEnv, Var } from "./env";

const schema = Type.Object({
  COUNT: Var.integer({ maximum: 10, default: 3 }),
  SWITCH: Var.boolean({}),
  MODE: Var.oneOf(["fast", "safe"], { default: "safe" }),
  NAME: Var.optional(Var.text({ pattern: "^[a-z]+$", expected: "lower-case letters" })),
  KEY: Var.text({ secret: true, minLength: 8, expected: "at least 8 characters long" }),
  LINK: Var.optional(Var.url(["https:"])),
  DELAYS: Var.list(Var.integer({ maximum: 60 }), {
    default: [1, 5],
    maxItems: 3,
    expected: "up to 3 comma-separated delays in seconds",
  }),
  TOKENS: Var.optional(
    Var.list(Var.text({ minLength: 4, expected: "at least 4 characters long" }), {
      each: "token",
      secret: true,
      expected: "a comma-separated list of non-empty tokens",
    }),
  ),
});
const key = { KEY: "k".repeat(8) };

describe("an environment parsed by its schema", () => {
  test("unset or blank takes the default or stays undefined; set text becomes the type", () => {
    expect(parseEnv(schema, { ...key, COUNT: " ", MODE: "" })).toEqual({
      ...key,
      COUNT: 3,
      SWITCH: false,
      MODE: "safe",
      DELAYS: [1, 5],
    });
    expect(
      parseEnv(schema, {
        ...key,
        COUNT: " 10 ",
        SWITCH: "Yes",
        MODE: "FAST",
        NAME: "abc",
        LINK: "https://x.example/",
        DELAYS: "0, 60",
        TOKENS: "abcd,efgh",
      }),
    ).toMatchObject({
      COUNT: 10,
      SWITCH: true,
      MODE: "fast",
      DELAYS: [0, 60],
      TOKENS: ["abcd", "efgh"],
    });
  });

  test.each([
    [{}, "KEY is required but not set"],
    [{ ...key, COUNT: "11" }, 'COUNT must be an integer from 0 to 10, got "11"'],
    [{ ...key, COUNT: "1.5" }, 'COUNT must be an integer from 0 to 10, got "1.5"'],
    [{ ...key, COUNT: "1e1" }, 'COUNT must be an integer from 0 to 10, got "1e1"'],
    [{ ...key, SWITCH: "maybe" }, 'SWITCH must be true or false, got "maybe"'],
    [{ ...key, MODE: "slow" }, 'MODE must be one of fast, safe, got "slow"'],
    [{ ...key, NAME: "ABC" }, 'NAME must be lower-case letters, got "ABC"'],
    [{ KEY: "short" }, "KEY must be at least 8 characters long"],
    [{ ...key, LINK: "http://x.example/" }, "LINK must be a URL starting with https:"],
    [{ ...key, LINK: "not a url" }, "LINK must be a URL starting with https:"],
    [{ ...key, DELAYS: "1,2,3,4" }, "DELAYS must be up to 3 comma-separated delays in seconds"],
    [{ ...key, DELAYS: "1,,2" }, "DELAYS must be up to 3 comma-separated delays in seconds"],
    [{ ...key, TOKENS: "abcd,ef" }, "TOKENS: each token must be at least 4 characters long"],
    [{ ...key, TOKENS: "abcd,,efgh" }, "TOKENS must be a comma-separated list of non-empty tokens"],
  ])("%j stops with one line naming the variable: %s", (env, message) => {
    expect(() => parseEnv(schema, env)).toThrow(ConfigError);
    expect(() => parseEnv(schema, env)).toThrow(message);
  });

  test("a secret's text is never repeated in the error", () => {
    expect(() => parseEnv(schema, { KEY: "hunter2" })).not.toThrow("hunter2");
    expect(() => parseEnv(schema, { ...key, TOKENS: "abcd,s3c" })).not.toThrow("s3c");
  });
});

import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { type ApiHarness, startApi } from "@commerce/testing/in-process";
import { runToEnd } from "@commerce/testing/launch";

setDefaultTimeout(120_000);

const here = new URL(".", import.meta.url).pathname;
const root = new URL("../..", import.meta.url).pathname;
// Inside the repository, so the usage file finds openapi-fetch in node_modules.
const generated = `${here}.generated/`;

let api: ApiHarness;
beforeAll(async () => {
  api = await startApi();
  rmSync(generated, { recursive: true, force: true });
  mkdirSync(generated, { recursive: true });
});
afterAll(async () => {
  await api.close();
  rmSync(generated, { recursive: true, force: true });
});

/** What a client written against the served document does; it must type-check as it is. */
const usage = `import createClient from "openapi-fetch";
import type { components, paths } from "./api";

type Order = components["schemas"]["Order"];
type Product = components["schemas"]["Product"];

const client = createClient<paths>({
  baseUrl: "http://127.0.0.1:3000",
  headers: { authorization: "Bearer <token>" },
});

export async function use(): Promise<void> {
  const product = await client.GET("/api/products/{id}", { params: { path: { id: 1 } } });
  if (product.data) {
    const name: string = product.data.name;
    const price: number = product.data.price;
    void [name, price];
  }
  if (product.error) {
    const detail: string = product.error.detail;
    void detail;
  }
  const list = await client.GET("/api/products", { params: { query: { page: 1, per_page: 20 } } });
  if (list.data) void list.data.items.map((item) => item.id);
  const order = await client.POST("/api/orders", { body: { product_id: 1, qty: 2 } });
  if (order.data) {
    const placed: Order = order.data;
    const id: number = placed.order_id;
    void id;
  }
  await client.POST("/api/orders", { body: { items: [{ product_id: 1, qty: 2 }] } });
  // @ts-expect-error an order body is one of its two shapes: {} is neither
  await client.POST("/api/orders", { body: {} });
  const checkout = await client.POST("/api/cart/checkout", {});
  if (checkout.data) void (checkout.data satisfies Order);
  const listed: Product[] | undefined = list.data?.items;
  void listed;
  await client.PUT("/api/cart/items/{product_id}", {
    params: { path: { product_id: 1 } },
    body: { qty: 2 },
  });
  await client.DELETE("/api/cart/items/{product_id}", { params: { path: { product_id: 1 } } });
  // @ts-expect-error the document has no trailing-slash paths
  await client.GET("/api/products/");
  // @ts-expect-error qty is a number
  await client.POST("/api/orders", { body: { product_id: 1, qty: "2" } });
}
`;

const run = async (command: string[]) => {
  const { out, err, code } = await runToEnd(command, { cwd: generated });
  return { code, output: out + err };
};

/** openapi-typescript's api.d.ts from openapi.json; it needs TypeScript 5's compiler API, which packages/client pins. */
const openapiTypescript = () =>
  run([
    "node",
    `${here}node_modules/openapi-typescript/bin/cli.js`,
    "openapi.json",
    "--output",
    "api.d.ts",
  ]);

/** tsc, strict and with no output, over usage files written in `generated`. */
const typeCheck = (files: string[]) => {
  writeFileSync(
    `${generated}tsconfig.json`,
    JSON.stringify({
      compilerOptions: {
        target: "ESNext",
        module: "Preserve",
        moduleResolution: "bundler",
        lib: ["ESNext", "DOM"],
        types: [],
        strict: true,
        noEmit: true,
        skipLibCheck: true,
      },
      files,
    }),
  );
  return run(["node", `${root}node_modules/typescript/bin/tsc`, "-p", "tsconfig.json"]);
};

/** D5: the same document through @hey-api/openapi-ts, its SDK functions named by operationId. */
const heyUsage = `import { checkoutCart, createOrder, getOrder, listProducts, resolvePaymentReview } from "./hey/sdk.gen";
import type { Order, PaymentReview, Product } from "./hey/types.gen";

export async function use(): Promise<void> {
  const products = await listProducts({ query: { page: 1 } });
  const first: Product | undefined = products.data?.items[0];
  const placed = await createOrder({ body: { product_id: 1, qty: 2 } });
  const order: Order | undefined = placed.data;
  await getOrder({ path: { order_id: 1 } });
  await checkoutCart();
  const review = await resolvePaymentReview({
    path: { id: 1 },
    body: { action: "apply", note: "paid by bank transfer", accept_amount: true },
  });
  const resolved: PaymentReview | undefined = review.data;
  // @ts-expect-error an order body is one of its two shapes: {} is neither
  await createOrder({ body: {} });
  // @ts-expect-error action is required: it has no default
  await resolvePaymentReview({ path: { id: 1 }, body: { note: "x" } });
  void [first, order, resolved];
}
`;

/** Type annotations of `any` in generated code, comments left out. */
const anyIn = (source: string) =>
  source
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/\/\/.*$/gm, "")
    .match(/\bany\b/g) ?? [];

test("D5: clients generated by openapi-typescript and @hey-api/openapi-ts have no any and type-check", async () => {
  const document = (await api.call("GET", "/swagger/json")).json;
  writeFileSync(`${generated}openapi.json`, JSON.stringify(document));
  const typescript5 = `file://${here}node_modules/typescript/lib/typescript.js`;
  // @hey-api/openapi-ts needs TypeScript 5's compiler API too; the root's TypeScript 7 has none.
  const hook = `export async function resolve(specifier, context, next) { return next(specifier === "typescript" ? ${JSON.stringify(typescript5)} : specifier, context); }`;
  writeFileSync(
    `${generated}typescript5.mjs`,
    `import { register } from "node:module";\nregister(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});\n`,
  );
  const hey = Bun.spawn(
    [
      "node",
      `${root}node_modules/@hey-api/openapi-ts/bin/run.js`,
      "-i",
      "openapi.json",
      "-o",
      "hey",
    ],
    {
      cwd: generated,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, NODE_OPTIONS: `--import ${generated}typescript5.mjs` },
    },
  );
  const heyOutput =
    (await new Response(hey.stderr).text()) + (await new Response(hey.stdout).text());
  expect({ code: await hey.exited, output: heyOutput }).toMatchObject({ code: 0 });
  const generate = await openapiTypescript();
  expect(generate).toMatchObject({ code: 0 });
  for (const file of ["api.d.ts", "hey/types.gen.ts", "hey/sdk.gen.ts"])
    expect({ file, any: anyIn(await Bun.file(`${generated}${file}`).text()) }).toEqual({
      file,
      any: [],
    });
  writeFileSync(`${generated}hey-usage.ts`, heyUsage);
  writeFileSync(`${generated}usage.ts`, usage);
  const check = await typeCheck(["usage.ts", "hey-usage.ts"]);
  expect(check).toEqual({ code: 0, output: "" });
});

test("D3: a client generated by openapi-typescript from the served document type-checks", async () => {
  const document = (await api.call("GET", "/swagger/json")).json;
  writeFileSync(`${generated}openapi.json`, JSON.stringify(document));
  const generate = await openapiTypescript();
  expect(generate).toMatchObject({ code: 0 });
  writeFileSync(`${generated}usage.ts`, usage);
  const check = await typeCheck(["usage.ts"]);
  expect(check).toEqual({ code: 0, output: "" });
});

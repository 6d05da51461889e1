import { describe, expect, test } from "bun:test";
import { unique } from "@commerce/testing/basics";
import { apiForFile, problemType } from "@commerce/testing/in-process";

const { api, admin } = await apiForFile();
const customer = (await api.customer()).token;

describe("products", () => {
  test("P1: lists one category by id ascending with page, pages, per_page and total", async () => {
    const category = unique("cat");
    const made = [];
    for (let i = 0; i < 5; i++)
      made.push(await api.product({ category, name: `P${i}`, price: 100 + i }));
    await api.product(); // another category, must not show

    const first = await api.call("GET", `/api/products?category=${category}&per_page=2`, {
      token: customer,
    });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({
      items: made.slice(0, 2),
      page: 1,
      pages: 3,
      per_page: 2,
      total: 5,
      next_after: made[1].id,
    });
    const last = await api.call("GET", `/api/products?category=${category}&per_page=2&page=3`, {
      token: customer,
    });
    expect(last.json.items).toEqual([made[4]]);
  });

  test("P1: defaults to page 1 and 20 per page; a page past the end is 200 with no items", async () => {
    const category = unique("cat");
    await api.product({ category });
    const page = await api.call("GET", `/api/products?category=${category}`, { token: customer });
    expect(page.json).toMatchObject({ page: 1, per_page: 20, pages: 1, total: 1 });
    const past = await api.call("GET", `/api/products?category=${category}&page=7`, {
      token: customer,
    });
    expect(past.status).toBe(200);
    expect(past.json).toEqual({
      items: [],
      page: 7,
      pages: 1,
      per_page: 20,
      total: 1,
      next_after: null,
    });
  });

  test("P1: an unknown category gives 0 pages and no items", async () => {
    const res = await api.call("GET", `/api/products?category=${unique("none")}`, {
      token: customer,
    });
    expect(res.json).toEqual({
      items: [],
      page: 1,
      pages: 0,
      per_page: 20,
      total: 0,
      next_after: null,
    });
  });

  test("P1: without a category lists every product", async () => {
    const made = await api.product();
    const res = await api.call("GET", "/api/products?per_page=100", { token: customer });
    expect(res.status).toBe(200);
    expect(res.json.total).toBeGreaterThanOrEqual(1);
    const ids = res.json.items.map((p: { id: number }) => p.id);
    expect(ids).toEqual([...ids].sort((a: number, b: number) => a - b));
    const total = res.json.total;
    const lastPage = await api.call(
      "GET",
      `/api/products?per_page=100&page=${Math.ceil(total / 100)}`,
      {
        token: customer,
      },
    );
    expect(lastPage.json.items.map((p: { id: number }) => p.id)).toContain(made.id);
  });

  test.each([
    "page=0",
    "page=-1",
    "page=abc",
    "page=1.5",
    "per_page=0",
    "per_page=101",
    "per_page=x",
    "page=",
  ])("P1: %s is 400 problem+json", async (query) => {
    const res = await api.call("GET", `/api/products?${query}`, { token: customer });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe(problemType);
    expect(res.json).toMatchObject({ status: 400, title: "Bad Request" });
    expect(res.json.errors[0].path).toMatch(/^\/(page|per_page)$/);
  });

  test("P2: reads one product", async () => {
    const made = await api.product({ name: "Teapot", price: 4500 });
    const res = await api.call("GET", `/api/products/${made.id}`, { token: customer });
    expect(res.status).toBe(200);
    expect(res.json).toEqual(made);
  });

  test("P2: an unknown id is 404, a non-positive or non-integer id is 400", async () => {
    expect((await api.call("GET", "/api/products/2147483000", { token: customer })).status).toBe(
      404,
    );
    for (const id of ["0", "-3", "abc", "1.5", "99999999999"]) {
      const res = await api.call("GET", `/api/products/${id}`, { token: customer });
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toBe(problemType);
    }
  });

  test("P3: an admin creates a product: 201 with Location", async () => {
    const category = unique("cat");
    const res = await api.call("POST", "/api/products", {
      token: admin,
      body: { name: "Kettle", price: 0, category },
    });
    expect(res.status).toBe(201);
    expect(res.json).toEqual({
      id: expect.any(Number),
      name: "Kettle",
      price: 0,
      category,
      stock: null,
    });
    expect(res.headers.get("location")).toBe(`/api/products/${res.json.id}`);
  });

  test("P3: a customer may not create or change products (403)", async () => {
    const made = await api.product();
    const create = await api.call("POST", "/api/products", {
      token: customer,
      body: { name: "X", price: 1, category: "c" },
    });
    expect(create.status).toBe(403);
    const change = await api.call("PATCH", `/api/products/${made.id}`, {
      token: customer,
      body: { price: 1 },
    });
    expect(change.status).toBe(403);
    expect((await api.call("GET", `/api/products/${made.id}`, { token: customer })).json).toEqual(
      made,
    );
  });

  test.each([
    [{ price: 1, category: "c" }, "/name"],
    [{ name: "", price: 1, category: "c" }, "/name"],
    [{ name: "x".repeat(201), price: 1, category: "c" }, "/name"],
    [{ name: "n", price: -1, category: "c" }, "/price"],
    [{ name: "n", price: 100_000_001, category: "c" }, "/price"],
    [{ name: "n", price: "5", category: "c" }, "/price"],
    [{ name: "n", price: 1.5, category: "c" }, "/price"],
    [{ name: "n", price: 1, category: "" }, "/category"],
    [{ name: "n", price: 1, category: "c".repeat(101) }, "/category"],
    [{ name: "n", price: 1, category: "c", extra: true }, "/extra"],
  ])("P3: invalid product %j is 400 naming %s and stores nothing", async (fields, path) => {
    const marker = unique("bad");
    const body = { ...fields, category: fields.category === "c" ? marker : fields.category };
    const res = await api.call("POST", "/api/products", { token: admin, body });
    expect(res.status).toBe(400);
    expect(res.json.errors.map((e: { path: string }) => e.path)).toContain(path);
    const [{ n }] =
      await api.sql`select count(*)::int as n from api.products where category = ${marker}`;
    expect(n).toBe(0);
  });

  test("P3: an admin changes some fields with PATCH; empty or unknown fields are 400; unknown id 404", async () => {
    const made = await api.product({ name: "Old", price: 10 });
    const res = await api.call("PATCH", `/api/products/${made.id}`, {
      token: admin,
      body: { price: 20 },
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ ...made, price: 20 });
    expect(
      (await api.call("PATCH", `/api/products/${made.id}`, { token: admin, body: {} })).status,
    ).toBe(400);
    expect(
      (await api.call("PATCH", `/api/products/${made.id}`, { token: admin, body: { id: 5 } }))
        .status,
    ).toBe(400);
    expect(
      (await api.call("PATCH", "/api/products/2147483000", { token: admin, body: { price: 1 } }))
        .status,
    ).toBe(404);
    expect(
      (await api.call("GET", `/api/products/${made.id}`, { token: customer })).json.price,
    ).toBe(20);
  });
});

describe("products: text PostgreSQL cannot store", () => {
  test("P3, E2: a NUL in a name or category is 400, never a 500", async () => {
    const res = await api.call("POST", "/api/products", {
      token: admin,
      body: { name: "Mug\u0000", price: 1, category: "c" },
    });
    expect(res.status).toBe(400);
    expect(res.json.errors[0].path).toBe("/name");
    const query = await api.call("GET", "/api/products?category=%00", { token: customer });
    expect(query.status).toBe(400);
  });
});

import { describe, expect, test } from "bun:test";
import { apiForFile } from "@commerce/testing/in-process";

const { api } = await apiForFile();

describe("cart", () => {
  test("C1: an empty cart is 200 with no items and total 0", async () => {
    const { token } = await api.customer();
    const res = await api.call("GET", "/api/cart", { token });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ items: [], total: 0 });
  });

  test("C2: a new item is 201, a changed quantity 200; C1 shows items and total", async () => {
    const mug = await api.product({ name: "Mug", price: 1000 });
    const pot = await api.product({ name: "Pot", price: 250 });
    const { token } = await api.customer();
    const added = await api.call("PUT", `/api/cart/items/${mug.id}`, { token, body: { qty: 1 } });
    expect(added.status).toBe(201);
    expect(added.json).toEqual({ product_id: mug.id, name: "Mug", price: 1000, qty: 1 });
    const changed = await api.call("PUT", `/api/cart/items/${mug.id}`, { token, body: { qty: 3 } });
    expect(changed.status).toBe(200);
    expect(changed.json.qty).toBe(3);
    await api.call("PUT", `/api/cart/items/${pot.id}`, { token, body: { qty: 2 } });
    const cart = await api.call("GET", "/api/cart", { token });
    expect(cart.json).toEqual({
      items: [
        { product_id: mug.id, name: "Mug", price: 1000, qty: 3 },
        { product_id: pot.id, name: "Pot", price: 250, qty: 2 },
      ],
      total: 3500,
    });
  });

  test("C2: an unknown product is 404; bad quantities and fields are 400; nothing is stored", async () => {
    const mug = await api.product();
    const { sub, token } = await api.customer();
    expect(
      (await api.call("PUT", "/api/cart/items/2147483000", { token, body: { qty: 1 } })).status,
    ).toBe(404);
    for (const body of [{ qty: 0 }, { qty: 1001 }, { qty: "2" }, { qty: 1, price: 1 }, {}]) {
      expect((await api.call("PUT", `/api/cart/items/${mug.id}`, { token, body })).status).toBe(
        400,
      );
    }
    expect((await api.call("PUT", "/api/cart/items/abc", { token, body: { qty: 1 } })).status).toBe(
      400,
    );
    const [{ n }] =
      await api.sql`select count(*)::int as n from api.cart_items where customer_id = ${sub}`;
    expect(n).toBe(0);
  });

  test("C3: removing an item is 204 with an empty body; removing it again is 404", async () => {
    const mug = await api.product();
    const { token } = await api.customer();
    await api.call("PUT", `/api/cart/items/${mug.id}`, { token, body: { qty: 1 } });
    const removed = await api.call("DELETE", `/api/cart/items/${mug.id}`, { token });
    expect(removed.status).toBe(204);
    expect(removed.text).toBe("");
    const again = await api.call("DELETE", `/api/cart/items/${mug.id}`, { token });
    expect(again.status).toBe(404);
    expect(again.json).toMatchObject({ status: 404 });
    expect((await api.call("GET", "/api/cart", { token })).json).toEqual({ items: [], total: 0 });
  });

  test("A4: each customer has their own cart", async () => {
    const mug = await api.product();
    const alice = await api.customer();
    const bob = await api.customer();
    await api.call("PUT", `/api/cart/items/${mug.id}`, { token: alice.token, body: { qty: 2 } });
    expect((await api.call("GET", "/api/cart", { token: bob.token })).json.items).toEqual([]);
    expect(
      (await api.call("DELETE", `/api/cart/items/${mug.id}`, { token: bob.token })).status,
    ).toBe(404);
    expect((await api.call("GET", "/api/cart", { token: alice.token })).json.items).toHaveLength(1);
  });
});

import { describe, expect, test } from "bun:test";
import { apiForFile, startApi } from "@commerce/testing/in-process";

// N5's limits as deployed (the harness turns them off for every other test).
const { api } = await apiForFile({ env: { HOLD_MAX_ORDERS: "5", HOLD_MAX_UNITS: "10" } });

async function trackedProduct(stock = 995) {
  const product = await api.product({ price: 500 });
  const admin = await api.admin();
  const res = await api.call("PATCH", `/api/products/${product.id}`, {
    token: admin,
    body: { stock },
  });
  if (res.status !== 200) throw new Error(`stock setup failed: ${res.status} ${res.text}`);
  return product;
}
const stockOf = async (id: number) =>
  Number((await api.sql`select stock from api.products where id = ${id}`)[0].stock);

describe("stock hoarding", () => {
  test("N5: the reviewer's attack: one customer cannot order all 995 units without paying", async () => {
    const product = await trackedProduct();
    const { token } = await api.customer();
    const all = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: product.id, qty: 995 },
    });
    expect(all.status).toBe(409);
    expect(all.json.detail).toContain("HOLD_MAX_UNITS");
    expect(all.json.errors).toEqual([{ path: "/qty", message: expect.stringContaining("10") }]);
    expect(await stockOf(product.id)).toBe(995);
    // Ten units across orders, then nothing more of that product.
    for (const qty of [6, 4])
      expect(
        (await api.call("POST", "/api/orders", { token, body: { product_id: product.id, qty } }))
          .status,
      ).toBe(201);
    const more = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: product.id, qty: 1 },
    });
    expect(more.status).toBe(409);
    expect(more.json.detail).toContain("HOLD_MAX_UNITS");
    expect(await stockOf(product.id)).toBe(985);
    // Everyone else still gets the rest.
    const other = await api.customer();
    expect(
      (
        await api.call("POST", "/api/orders", {
          token: other.token,
          body: { product_id: product.id, qty: 10 },
        })
      ).status,
    ).toBe(201);
  });

  test("N5: at most HOLD_MAX_ORDERS unpaid orders; a cancelled one frees a place; checkout too", async () => {
    const { token } = await api.customer();
    const untracked = await api.product();
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await api.call("POST", "/api/orders", {
        token,
        body: { product_id: untracked.id, qty: 1 },
      });
      expect(res.status).toBe(201);
      ids.push(res.json.order_id);
    }
    const sixth = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: untracked.id, qty: 1 },
    });
    expect(sixth.status).toBe(409);
    expect(sixth.json.detail).toContain("HOLD_MAX_ORDERS");
    // Checkout is an order too: refused, and the cart is kept.
    await api.call("PUT", `/api/cart/items/${untracked.id}`, { token, body: { qty: 1 } });
    const checkout = await api.call("POST", "/api/cart/checkout", { token });
    expect(checkout.status).toBe(409);
    expect(checkout.json.detail).toContain("HOLD_MAX_ORDERS");
    expect((await api.call("GET", "/api/cart", { token })).json.items).toHaveLength(1);
    // Cancelling one frees a place.
    expect(
      (await api.call("PATCH", `/api/orders/${ids[0]}`, { token, body: { status: "cancelled" } }))
        .status,
    ).toBe(200);
    expect((await api.call("POST", "/api/cart/checkout", { token })).status).toBe(201);
  });

  test("N5: concurrent requests of one customer are counted against each other", async () => {
    const product = await trackedProduct(100);
    const { token } = await api.customer();
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        api.call("POST", "/api/orders", { token, body: { product_id: product.id, qty: 3 } }),
      ),
    );
    const placed = answers.filter((a) => a.status === 201).length;
    // 3 orders of 3 units (9 <= 10); the fourth would make 12.
    expect(placed).toBe(3);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(9);
    expect(await stockOf(product.id)).toBe(100 - 9);
  });

  test("N5: an admin is exempt, and 0 turns the limits off", async () => {
    const product = await trackedProduct(50);
    const admin = await api.admin();
    expect(
      (
        await api.call("POST", "/api/orders", {
          token: admin,
          body: { product_id: product.id, qty: 30 },
        })
      ).status,
    ).toBe(201);
    const unlimited = await startApi({ env: { HOLD_MAX_ORDERS: "0", HOLD_MAX_UNITS: "0" } });
    try {
      const { token } = await unlimited.customer();
      expect(
        (
          await unlimited.call("POST", "/api/orders", {
            token,
            body: { product_id: product.id, qty: 20 },
          })
        ).status,
      ).toBe(201);
    } finally {
      await unlimited.close();
    }
  });
});

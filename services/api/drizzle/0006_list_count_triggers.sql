-- P4: list totals kept by triggers, so every write path keeps them exact, whichever code runs it.
-- Safe while the service serves traffic: the SHARE lock lets reads go on and makes writers to
-- products and orders wait until this transaction commits (the migrator runs every pending
-- migration in one transaction), so no row is written between the backfill and the triggers.
-- The pause lasts about as long as counting the two tables (about a second per million rows).
LOCK TABLE "api"."products", "api"."orders" IN SHARE MODE;
--> statement-breakpoint
-- Each connection adds to one of 16 slots: concurrent orders seldom wait on the same counter row.
CREATE FUNCTION "api"."list_count_slot"() RETURNS smallint
LANGUAGE sql VOLATILE AS $$ SELECT (pg_backend_pid() % 16)::smallint $$;
--> statement-breakpoint
CREATE FUNCTION "api"."list_keys_of_product"(category text) RETURNS TABLE (list text, key text)
LANGUAGE sql IMMUTABLE AS $$ VALUES ('products', ''), ('products/category', category) $$;
--> statement-breakpoint
CREATE FUNCTION "api"."list_keys_of_order"(customer_id text, status text)
RETURNS TABLE (list text, key text)
LANGUAGE sql IMMUTABLE AS $$
  VALUES ('orders', ''), ('orders/status', status), ('orders/customer', customer_id),
    ('orders/customer+status', status || ' ' || customer_id)
$$;
--> statement-breakpoint
-- Counter rows are written in (list, key) order, so two writers that share a slot take their
-- row locks in the same order and cannot deadlock on them.
CREATE FUNCTION "api"."count_products"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO api.list_counts AS c (list, key, slot, n)
    SELECT k.list, k.key, api.list_count_slot(), count(*)
    FROM new_rows r, api.list_keys_of_product(r.category) k
    GROUP BY k.list, k.key ORDER BY k.list, k.key
    ON CONFLICT (list, key, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO api.list_counts AS c (list, key, slot, n)
    SELECT k.list, k.key, api.list_count_slot(), -count(*)
    FROM old_rows r, api.list_keys_of_product(r.category) k
    GROUP BY k.list, k.key ORDER BY k.list, k.key
    ON CONFLICT (list, key, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO api.list_counts AS c (list, key, slot, n)
    SELECT d.list, d.key, api.list_count_slot(), sum(d.n)
    FROM (SELECT k.*, -1 AS n FROM api.list_keys_of_product(OLD.category) k
          UNION ALL SELECT k.*, 1 FROM api.list_keys_of_product(NEW.category) k) d
    GROUP BY d.list, d.key HAVING sum(d.n) <> 0 ORDER BY d.list, d.key
    ON CONFLICT (list, key, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    DELETE FROM api.list_counts WHERE list IN ('products', 'products/category');
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION "api"."count_orders"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO api.list_counts AS c (list, key, slot, n)
    SELECT k.list, k.key, api.list_count_slot(), count(*)
    FROM new_rows r, api.list_keys_of_order(r.customer_id, r.status) k
    GROUP BY k.list, k.key ORDER BY k.list, k.key
    ON CONFLICT (list, key, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO api.list_counts AS c (list, key, slot, n)
    SELECT k.list, k.key, api.list_count_slot(), -count(*)
    FROM old_rows r, api.list_keys_of_order(r.customer_id, r.status) k
    GROUP BY k.list, k.key ORDER BY k.list, k.key
    ON CONFLICT (list, key, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO api.list_counts AS c (list, key, slot, n)
    SELECT d.list, d.key, api.list_count_slot(), sum(d.n)
    FROM (SELECT k.*, -1 AS n FROM api.list_keys_of_order(OLD.customer_id, OLD.status) k
          UNION ALL SELECT k.*, 1 FROM api.list_keys_of_order(NEW.customer_id, NEW.status) k) d
    GROUP BY d.list, d.key HAVING sum(d.n) <> 0 ORDER BY d.list, d.key
    ON CONFLICT (list, key, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    DELETE FROM api.list_counts WHERE list LIKE 'orders%';
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Inserts and deletes count once per statement (a bulk load or a CTE writes one counter update
-- per key); an update fires only when it moves a row to another list.
CREATE TRIGGER "products_count_insert" AFTER INSERT ON "api"."products"
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "api"."count_products"();
--> statement-breakpoint
CREATE TRIGGER "products_count_delete" AFTER DELETE ON "api"."products"
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "api"."count_products"();
--> statement-breakpoint
CREATE TRIGGER "products_count_update" AFTER UPDATE OF "category" ON "api"."products"
FOR EACH ROW WHEN (OLD.category IS DISTINCT FROM NEW.category)
EXECUTE FUNCTION "api"."count_products"();
--> statement-breakpoint
CREATE TRIGGER "products_count_truncate" AFTER TRUNCATE ON "api"."products"
FOR EACH STATEMENT EXECUTE FUNCTION "api"."count_products"();
--> statement-breakpoint
CREATE TRIGGER "orders_count_insert" AFTER INSERT ON "api"."orders"
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "api"."count_orders"();
--> statement-breakpoint
CREATE TRIGGER "orders_count_delete" AFTER DELETE ON "api"."orders"
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "api"."count_orders"();
--> statement-breakpoint
CREATE TRIGGER "orders_count_update" AFTER UPDATE OF "status", "customer_id" ON "api"."orders"
FOR EACH ROW
WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.customer_id IS DISTINCT FROM NEW.customer_id)
EXECUTE FUNCTION "api"."count_orders"();
--> statement-breakpoint
CREATE TRIGGER "orders_count_truncate" AFTER TRUNCATE ON "api"."orders"
FOR EACH STATEMENT EXECUTE FUNCTION "api"."count_orders"();
--> statement-breakpoint
INSERT INTO "api"."list_counts" (list, key, slot, n)
SELECT k.list, k.key, 0, count(*)
FROM "api"."products" p, "api"."list_keys_of_product"(p.category) k
GROUP BY k.list, k.key;
--> statement-breakpoint
INSERT INTO "api"."list_counts" (list, key, slot, n)
SELECT k.list, k.key, 0, count(*)
FROM "api"."orders" o, "api"."list_keys_of_order"(o.customer_id, o.status) k
GROUP BY k.list, k.key;

-- P4. Safe while the service serves traffic, with a pause for writers: the migrator applies all
-- pending migrations in one transaction, so CREATE INDEX CONCURRENTLY is not possible here. A
-- plain CREATE INDEX holds a SHARE lock on orders until the commit: reads go on, writes to
-- orders wait (about a second per index per million orders). For a table too large for that
-- pause, build the two indexes by hand beforehand with CREATE INDEX CONCURRENTLY and the same
-- names; IF NOT EXISTS then skips them here.
CREATE TABLE "api"."list_counts" (
	"list" text NOT NULL,
	"key" text NOT NULL,
	"slot" smallint NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "list_counts_list_key_slot_pk" PRIMARY KEY("list","key","slot")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "orders_status_id_idx" ON "api"."orders" USING btree ("status","id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "orders_customer_status_id_idx" ON "api"."orders" USING btree ("customer_id","status","id");

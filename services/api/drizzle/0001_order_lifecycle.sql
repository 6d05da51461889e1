CREATE TABLE "api"."order_items" (
	"order_id" bigint NOT NULL,
	"product_id" integer NOT NULL,
	"line" integer NOT NULL,
	"name" text NOT NULL,
	"qty" integer NOT NULL,
	"unit_price" integer NOT NULL,
	"amount" bigint NOT NULL,
	CONSTRAINT "order_items_order_id_product_id_pk" PRIMARY KEY("order_id","product_id"),
	CONSTRAINT "order_items_qty_check" CHECK ("api"."order_items"."qty" > 0)
);
--> statement-breakpoint
ALTER TABLE "api"."orders" DROP CONSTRAINT "orders_paid_at_check";--> statement-breakpoint
ALTER TABLE "api"."orders" DROP CONSTRAINT "orders_status_check";--> statement-breakpoint
ALTER TABLE "api"."orders" DROP CONSTRAINT "orders_product_id_products_id_fk";
--> statement-breakpoint
ALTER TABLE "api"."orders" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api"."orders" ADD COLUMN "cancelled_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api"."orders" ADD COLUMN "refunded_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api"."orders" ADD COLUMN "cancel_reason" text;--> statement-breakpoint
ALTER TABLE "api"."products" ADD COLUMN "stock" integer;--> statement-breakpoint
ALTER TABLE "api"."order_items" ADD CONSTRAINT "order_items_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "api"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api"."order_items" ADD CONSTRAINT "order_items_product_id_products_id_fk" FOREIGN KEY ("product_id") REFERENCES "api"."products"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "orders_expiry_idx" ON "api"."orders" USING btree ("expires_at") WHERE "api"."orders"."status" = 'created';--> statement-breakpoint
-- Each existing one-line order becomes its first line, at the unit price it was charged.
INSERT INTO "api"."order_items" ("order_id", "product_id", "line", "name", "qty", "unit_price", "amount")
SELECT o."id", o."product_id", 0, p."name", o."qty", (o."amount" / o."qty")::integer, o."amount"
FROM "api"."orders" o JOIN "api"."products" p ON p."id" = o."product_id";--> statement-breakpoint
ALTER TABLE "api"."orders" DROP COLUMN "product_id";--> statement-breakpoint
ALTER TABLE "api"."orders" DROP COLUMN "qty";--> statement-breakpoint
ALTER TABLE "api"."orders" ADD CONSTRAINT "orders_cancel_reason_check" CHECK ("api"."orders"."cancel_reason" is null or "api"."orders"."cancel_reason" in ('customer', 'admin', 'expired'));--> statement-breakpoint
ALTER TABLE "api"."orders" ADD CONSTRAINT "orders_status_check" CHECK ("api"."orders"."status" in ('created', 'paid', 'cancelled', 'refunded'));--> statement-breakpoint
ALTER TABLE "api"."products" ADD CONSTRAINT "products_stock_check" CHECK ("api"."products"."stock" is null or "api"."products"."stock" >= 0);
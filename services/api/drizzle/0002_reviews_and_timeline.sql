CREATE TABLE "api"."order_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "api"."order_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"order_id" bigint NOT NULL,
	"type" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"source" text NOT NULL,
	"notification_id" text,
	"detail" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ADD COLUMN "event" text;--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ADD COLUMN "amount" bigint;--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ADD COLUMN "currency" text;--> statement-breakpoint
-- Reviews kept before these columns existed were all of payment.succeeded messages.
UPDATE "api"."payment_reviews" SET "event" = coalesce("message"->>'event', 'payment.succeeded'),
  "amount" = ("message"->>'amount')::bigint, "currency" = "message"->>'currency';--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ALTER COLUMN "event" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ALTER COLUMN "amount" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ALTER COLUMN "currency" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ADD COLUMN "status" text DEFAULT 'open' NOT NULL;--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ADD COLUMN "resolution" text;--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ADD COLUMN "note" text;--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ADD COLUMN "resolved_by" text;--> statement-breakpoint
ALTER TABLE "api"."payment_reviews" ADD COLUMN "resolved_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api"."order_events" ADD CONSTRAINT "order_events_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "api"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "order_events_order_id_idx" ON "api"."order_events" USING btree ("order_id","id");--> statement-breakpoint
CREATE INDEX "order_events_notification_id_idx" ON "api"."order_events" USING btree ("notification_id");--> statement-breakpoint
CREATE INDEX "payment_reviews_status_id_idx" ON "api"."payment_reviews" USING btree ("status","id");--> statement-breakpoint
CREATE INDEX "payment_reviews_order_id_idx" ON "api"."payment_reviews" USING btree ("order_id");
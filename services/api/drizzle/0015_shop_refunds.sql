CREATE TABLE "api"."refunds" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "api"."refunds_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"order_id" bigint NOT NULL,
	"amount" bigint NOT NULL,
	"currency" text NOT NULL,
	"status" text DEFAULT 'requested' NOT NULL,
	"provider" text NOT NULL,
	"payment_ref" text NOT NULL,
	"provider_refund_id" text,
	"reason" text,
	"failure_reason" text,
	"note" text NOT NULL,
	"actor" text NOT NULL,
	"requested_at" timestamp with time zone DEFAULT now() NOT NULL,
	"settled_at" timestamp with time zone,
	CONSTRAINT "refunds_amount_check" CHECK ("api"."refunds"."amount" > 0),
	CONSTRAINT "refunds_status_check" CHECK ("api"."refunds"."status" in ('requested', 'pending', 'succeeded', 'failed'))
);
--> statement-breakpoint
ALTER TABLE "api"."orders" ADD COLUMN "refunded_amount" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "api"."refunds" ADD CONSTRAINT "refunds_order_id_orders_id_fk" FOREIGN KEY ("order_id") REFERENCES "api"."orders"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "refunds_order_id_idx" ON "api"."refunds" USING btree ("order_id","id");--> statement-breakpoint
CREATE INDEX "refunds_provider_refund_id_idx" ON "api"."refunds" USING btree ("provider","provider_refund_id");
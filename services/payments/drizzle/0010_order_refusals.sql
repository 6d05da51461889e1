CREATE TABLE "payments"."order_refusals" (
	"order_id" bigint NOT NULL,
	"provider" text NOT NULL,
	"reason" text NOT NULL,
	"count" bigint NOT NULL,
	"first_at" timestamp with time zone NOT NULL,
	"last_at" timestamp with time zone NOT NULL,
	"first_examples" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"latest_examples" jsonb DEFAULT '[]'::jsonb NOT NULL,
	CONSTRAINT "order_refusals_order_id_provider_reason_pk" PRIMARY KEY("order_id","provider","reason")
);
--> statement-breakpoint
CREATE INDEX "order_refusals_last_at_idx" ON "payments"."order_refusals" USING btree ("last_at");
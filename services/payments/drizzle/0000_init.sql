CREATE SCHEMA "payments";
--> statement-breakpoint
CREATE TABLE "payments"."notifications" (
	"id" text PRIMARY KEY NOT NULL,
	"event" text NOT NULL,
	"order_id" bigint NOT NULL,
	"amount" bigint NOT NULL,
	"currency" text NOT NULL,
	"raw_body" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"source_ip" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payments"."outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"subject" text NOT NULL,
	"message_id" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX "notifications_order_id_idx" ON "payments"."notifications" USING btree ("order_id");--> statement-breakpoint
CREATE INDEX "outbox_unpublished_idx" ON "payments"."outbox" USING btree ("id") WHERE "payments"."outbox"."published_at" is null;
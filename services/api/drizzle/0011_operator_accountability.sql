CREATE TABLE "api"."audit_log" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "api"."audit_log_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"target" text NOT NULL,
	"detail" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api"."order_events" ADD COLUMN "actor" text;--> statement-breakpoint
ALTER TABLE "api"."webhook_deliveries" ADD COLUMN "manual_attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "outbox_created_at_brin_idx" ON "api"."outbox" USING brin ("created_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_order_id_idx" ON "api"."webhook_deliveries" USING btree ("order_id","id");
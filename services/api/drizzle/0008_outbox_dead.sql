ALTER TABLE "api"."outbox" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "api"."outbox" ADD COLUMN "last_error" text;--> statement-breakpoint
ALTER TABLE "api"."outbox" ADD COLUMN "dead_at" timestamp with time zone;
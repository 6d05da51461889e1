ALTER TABLE "payments"."notifications" ADD COLUMN "traceparent" text;--> statement-breakpoint
ALTER TABLE "payments"."outbox" ADD COLUMN "headers" jsonb;
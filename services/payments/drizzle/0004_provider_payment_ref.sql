ALTER TABLE "payments"."notifications" ALTER COLUMN "order_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "payments"."notifications" ALTER COLUMN "amount" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "payments"."notifications" ALTER COLUMN "currency" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "payments"."notifications" ADD COLUMN "provider" text DEFAULT 'generic' NOT NULL;--> statement-breakpoint
ALTER TABLE "payments"."notifications" ADD COLUMN "payment_ref" text;--> statement-breakpoint
CREATE INDEX "notifications_provider_received_at_idx" ON "payments"."notifications" USING btree ("provider","received_at","id");
-- G5: drizzle-kit cannot name the old primary key (its own note); it is PostgreSQL's default name.
ALTER TABLE "payments"."notifications" DROP CONSTRAINT "notifications_pkey";--> statement-breakpoint
ALTER TABLE "payments"."notifications" ADD COLUMN "key" text PRIMARY KEY GENERATED ALWAYS AS (case when provider = 'generic' then case when id ~ '^(generic|stripe|adyen):' then 'generic:' || id else id end when starts_with(id, provider || ':') then id else provider || ':' || id end) STORED NOT NULL;--> statement-breakpoint
ALTER TABLE "payments"."notifications" ADD COLUMN "ignored" text;--> statement-breakpoint
ALTER TABLE "payments"."notifications" ADD COLUMN "stage" text;--> statement-breakpoint
CREATE INDEX "notifications_id_idx" ON "payments"."notifications" USING btree ("id");
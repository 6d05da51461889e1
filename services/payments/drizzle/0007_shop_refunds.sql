CREATE TABLE "payments"."refunds" (
	"refund_id" bigint PRIMARY KEY NOT NULL,
	"order_id" bigint NOT NULL,
	"provider" text NOT NULL,
	"payment_ref" text NOT NULL,
	"amount" bigint NOT NULL,
	"currency" text NOT NULL,
	"reason" text,
	"status" text DEFAULT 'requested' NOT NULL,
	"provider_refund_id" text,
	"failure_reason" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"leased_until" timestamp with time zone,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"settled_at" timestamp with time zone,
	"request_subject" text NOT NULL,
	CONSTRAINT "refunds_status_check" CHECK ("payments"."refunds"."status" in ('requested', 'pending', 'succeeded', 'failed', 'unknown'))
);
--> statement-breakpoint
CREATE INDEX "refunds_due_idx" ON "payments"."refunds" USING btree ("next_attempt_at") WHERE "payments"."refunds"."status" in ('requested', 'pending');
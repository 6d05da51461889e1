CREATE TABLE "payments"."adyen_reports" (
	"scope" text NOT NULL,
	"notification_key" text NOT NULL,
	"file_name" text NOT NULL,
	"url" text NOT NULL,
	"status" text DEFAULT 'due' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"leased_until" timestamp with time zone,
	"lease_token" text,
	"run_id" bigint,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "adyen_reports_scope_notification_key_pk" PRIMARY KEY("scope","notification_key"),
	CONSTRAINT "adyen_reports_status_check" CHECK ("payments"."adyen_reports"."status" in ('due', 'done', 'refused', 'failed'))
);
--> statement-breakpoint
CREATE INDEX "adyen_reports_due_idx" ON "payments"."adyen_reports" USING btree ("scope","next_attempt_at") WHERE "payments"."adyen_reports"."status" = 'due';
CREATE TABLE "payments"."audit_log" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "payments"."audit_log_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"target" text NOT NULL,
	"detail" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payments"."refused_notifications" (
	"provider" text NOT NULL,
	"reason" text NOT NULL,
	"minute" timestamp with time zone NOT NULL,
	"count" bigint NOT NULL,
	"first_at" timestamp with time zone NOT NULL,
	"last_at" timestamp with time zone NOT NULL,
	"examples" jsonb DEFAULT '[]'::jsonb NOT NULL,
	CONSTRAINT "refused_notifications_provider_reason_minute_pk" PRIMARY KEY("provider","reason","minute")
);
--> statement-breakpoint
CREATE INDEX "audit_log_at_idx" ON "payments"."audit_log" USING btree ("at","id");--> statement-breakpoint
CREATE INDEX "refused_notifications_minute_idx" ON "payments"."refused_notifications" USING btree ("minute");
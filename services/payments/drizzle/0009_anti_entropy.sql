CREATE TABLE "payments"."reconciliation_checkpoints" (
	"kind" text NOT NULL,
	"scope" text NOT NULL,
	"checked_until" timestamp with time zone,
	CONSTRAINT "reconciliation_checkpoints_kind_scope_pk" PRIMARY KEY("kind","scope")
);
--> statement-breakpoint
CREATE TABLE "payments"."reconciliation_runs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "payments"."reconciliation_runs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"scope" text NOT NULL,
	"provider" text,
	"kind" text NOT NULL,
	"window_from" timestamp with time zone NOT NULL,
	"window_to" timestamp with time zone NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"checked" integer DEFAULT 0 NOT NULL,
	"found" integer DEFAULT 0 NOT NULL,
	"applied" integer DEFAULT 0 NOT NULL,
	"errors" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "reconciliation_runs_scope_idx" ON "payments"."reconciliation_runs" USING btree ("scope","started_at","id");--> statement-breakpoint
CREATE INDEX "outbox_published_at_idx" ON "payments"."outbox" USING btree ("published_at","id") WHERE "payments"."outbox"."published_at" is not null;
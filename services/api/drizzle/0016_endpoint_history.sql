-- H3 (v5): when an endpoint was last disabled and by whom, and since when it subscribes to each
-- of its event types, so replay-missing never queues an event from before it subscribed.
ALTER TABLE "api"."webhook_endpoints" ADD COLUMN "disabled_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "api"."webhook_endpoints" ADD COLUMN "disabled_by" text;--> statement-breakpoint
ALTER TABLE "api"."webhook_endpoints" ADD COLUMN "events_since" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
-- An existing endpoint subscribed to its events when it was created (the earliest it can have).
UPDATE "api"."webhook_endpoints" e SET "events_since" = (
  SELECT coalesce(jsonb_object_agg(ev, to_jsonb(e.created_at)), '{}'::jsonb) FROM unnest(e.events) ev
);--> statement-breakpoint
-- An endpoint disabled by an admin before this: the moment and the admin from the audit log (V5).
-- One the api disabled (gone, failing) left no record: its moment stays unknown (null).
UPDATE "api"."webhook_endpoints" e SET "disabled_at" = a.at, "disabled_by" = a.actor
FROM (
  SELECT DISTINCT ON (target) target, at, actor FROM "api"."audit_log"
  WHERE action = 'webhook_endpoint.disable' ORDER BY target, at DESC
) a
WHERE e.status = 'disabled' AND e.disabled_reason = 'manual' AND a.target = 'webhook-endpoint/' || e.id;

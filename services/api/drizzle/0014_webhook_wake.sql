-- H10: a transaction that queued webhook deliveries wakes every api's dispatcher when it commits
-- (PostgreSQL delivers a NOTIFY at commit, and never for a rolled-back one), so a replica that did
-- not commit the move claims at once instead of at its next poll. Once per statement, and only
-- when rows came in: an event no endpoint subscribes to costs nothing more.
CREATE FUNCTION "api"."webhook_deliveries_wake"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT FROM queued) THEN
    PERFORM pg_notify('api_webhooks_due', '');
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "webhook_deliveries_wake" AFTER INSERT ON "api"."webhook_deliveries"
REFERENCING NEW TABLE AS queued FOR EACH STATEMENT EXECUTE FUNCTION "api"."webhook_deliveries_wake"();

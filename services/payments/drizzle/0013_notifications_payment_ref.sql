-- B1 (issue 38): reconciliation's lookup of a payment's stored notifications. The migrator applies
-- its migrations in one transaction, so no CONCURRENTLY here: the build holds a SHARE lock on
-- payments.notifications (intake waits, seconds per million rows). For a much larger table build
-- it beforehand with CREATE INDEX CONCURRENTLY under this name: this migration skips it then.
CREATE INDEX IF NOT EXISTS "notifications_provider_payment_ref_idx" ON "payments"."notifications" USING btree ("provider","payment_ref");

CREATE TABLE "api"."placement_locks" (
	"customer_id" text PRIMARY KEY NOT NULL
);

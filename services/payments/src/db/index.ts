// The schema (./schema.ts) is drizzle-kit's input; the service queries with postgres.js.
export { default as migrations } from "../../drizzle/migrations.json";

// Files imported `with { type: "file" }`: Bun embeds them in the binary and the import is their path.
declare module "swagger-ui-dist/swagger-ui-bundle.js" {
  const path: string;
  export default path;
}
declare module "swagger-ui-dist/swagger-ui.css" {
  const path: string;
  export default path;
}
declare module "swagger-ui-dist/favicon-32x32.png" {
  const path: string;
  export default path;
}

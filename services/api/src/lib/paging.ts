// The api's lists page as every list of both services does (P1).
export * from "@commerce/shared/http/paging";

export type FieldError = { path: string; message: string };

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
  /** A stable name of what went wrong, for a client that says it in its own words (V6). */
  code?: string;
};

/** An error that knows its HTTP status; the problem plugin turns it into problem+json (E1). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    detail: string,
    readonly errors?: FieldError[],
    readonly headers?: Record<string, string>,
    readonly code?: string,
  ) {
    super(detail);
  }

  toProblem(): Problem {
    const problem: Problem = {
      // RFC 9457's default: the status and title say all there is to say.
      type: "about:blank",
      title: this.title,
      status: this.status,
      detail: this.message,
    };
    if (this.errors) problem.errors = this.errors;
    if (this.code) problem.code = this.code;
    return problem;
  }
}

export class ValidationError extends HttpError {
  constructor(detail: string, errors?: FieldError[]) {
    super(400, "Bad Request", detail, errors);
  }
}

export class UnauthorizedError extends HttpError {
  constructor(detail = "Missing or invalid credentials", headers?: Record<string, string>) {
    super(401, "Unauthorized", detail, undefined, headers);
  }
}

export class ForbiddenError extends HttpError {
  constructor(detail = "This token does not grant the needed scope") {
    super(403, "Forbidden", detail);
  }
}

export class NotFoundError extends HttpError {
  constructor(detail = "Not found") {
    super(404, "Not Found", detail);
  }
}

export class ConflictError extends HttpError {
  /** `code`: a stable name of the conflict (e.g. `amount_not_accepted`), for clients (V6). */
  constructor(detail: string, errors?: FieldError[], code?: string) {
    super(409, "Conflict", detail, errors, undefined, code);
  }
}

export class PayloadTooLargeError extends HttpError {
  constructor(limitBytes: number) {
    super(413, "Payload Too Large", `The request body is larger than ${limitBytes} bytes`);
  }
}

export class UnsupportedMediaTypeError extends HttpError {
  constructor() {
    super(415, "Unsupported Media Type", "The request body must be application/json");
  }
}

export class UnprocessableError extends HttpError {
  constructor(detail: string) {
    super(422, "Unprocessable Content", detail);
  }
}

export class RateLimitedError extends HttpError {
  constructor(retryAfterSeconds: number) {
    super(429, "Too Many Requests", "Rate limit exceeded; retry later", undefined, {
      "retry-after": String(retryAfterSeconds),
    });
  }
}

/**
 * N3: the client hung up before its request was read. Nobody receives the answer; 499 (nginx's
 * "client closed request") keeps it apart from the server's own errors in logs and metrics.
 */
export class ClientClosedError extends HttpError {
  constructor() {
    super(499, "Client Closed Request", "The client closed the connection before sending the body");
  }
}

export class UnavailableError extends HttpError {
  constructor(detail = "A dependency is unavailable; retry later") {
    super(503, "Service Unavailable", detail, undefined, { "retry-after": "1" });
  }
}

export function problemResponse(error: HttpError, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(error.toProblem()), {
    status: error.status,
    headers: { ...headers, ...error.headers, "content-type": "application/problem+json" },
  });
}

/** E4: a known path asked with a method it does not serve; `Allow` lists those it does. */
export class MethodNotAllowedError extends HttpError {
  constructor(method: string, allowed: string[]) {
    super(
      405,
      "Method Not Allowed",
      `${method} is not served on this path; it serves ${allowed.join(", ")}`,
      undefined,
      { allow: allowed.join(", ") },
    );
  }
}

/** E4: request headers over the service's limit. */
export class HeadersTooLargeError extends HttpError {
  constructor(limitBytes: number) {
    super(
      431,
      "Request Header Fields Too Large",
      `The request headers are larger than ${limitBytes} bytes`,
    );
  }
}

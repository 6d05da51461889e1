import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { connect } from "node:net";
import { eventually, unique } from "@commerce/testing/basics";
import { type ServiceProcess, type Stack, startStack } from "@commerce/testing/processes";

setDefaultTimeout(30_000);

let stack: Stack;
beforeAll(async () => {
  // The request log lines are at info.
  stack = await startStack({ env: { LOG_LEVEL: "info" } });
});
afterAll(() => stack.stop());

type RawAnswer = { status: number; headers: Record<string, string>; body: string };

/**
 * One request over a plain socket, so the body can go chunked (no Content-Length) and the
 * answer is read as the server wrote it, even when it answers before the body is all sent.
 */
function rawRequest(
  service: ServiceProcess,
  head: Record<string, string>,
  body: { chunked: number } | { declared: number; withheld?: true },
): Promise<RawAnswer> {
  const { method, path, ...headers } = head;
  return new Promise((resolve, reject) => {
    const socket = connect(service.port, "127.0.0.1");
    let received = Buffer.alloc(0);
    // Once the server has begun its answer, the rest of the body is not sent (see below).
    let answering = false;
    const answer = (): RawAnswer | undefined => {
      const end = received.indexOf("\r\n\r\n");
      if (end < 0) return undefined;
      const [statusLine, ...lines] = received.subarray(0, end).toString().split("\r\n");
      const fields = Object.fromEntries(
        lines.map((line) => {
          const colon = line.indexOf(":");
          return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
        }),
      );
      const length = Number(fields["content-length"] ?? 0);
      if (received.length < end + 4 + length) return undefined;
      const text = received.subarray(end + 4, end + 4 + length).toString();
      return { status: Number(statusLine.split(" ")[1]), headers: fields, body: text };
    };
    socket.on("data", (data: Buffer) => {
      answering = true;
      received = Buffer.concat([received, data]);
      const done = answer();
      if (done) {
        socket.destroy();
        resolve(done);
      }
    });
    // The server may close while the body is still going out: the answer is what matters.
    socket.on("error", () => {});
    socket.on("close", () => {
      const done = answer();
      if (done) resolve(done);
      else reject(new Error(`no answer: ${received.toString().slice(0, 200)}`));
    });
    const lines = [`${method} ${path} HTTP/1.1`, "Host: 127.0.0.1"];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    if ("chunked" in body) lines.push("Transfer-Encoding: chunked");
    else lines.push(`Content-Length: ${body.declared}`);
    socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    const piece = `{"pad":"${"x".repeat(4084)}"}`.slice(0, 4096);
    const total = "chunked" in body ? body.chunked : body.declared;
    const send = async () => {
      for (let sent = 0; sent < total && !socket.destroyed && !answering; sent += piece.length) {
        const part = piece.slice(0, Math.min(piece.length, total - sent));
        socket.write("chunked" in body ? `${part.length.toString(16)}\r\n${part}\r\n` : part);
        await Bun.sleep(1);
      }
      if ("chunked" in body && !socket.destroyed && !answering) socket.write("0\r\n\r\n");
    };
    // A body the server refuses by its declared length alone is not sent: bytes arriving after
    // its answer and close would make the kernel reset the connection, and a reset can discard
    // the answer before this socket reads it.
    if (!("withheld" in body)) void send();
  });
}

const logLineOf = (service: ServiceProcess, requestId: string) =>
  eventually(
    async () =>
      service.output
        .split("\n")
        .filter((line) => line.includes('"msg":"request"') && line.includes(requestId))
        .map((line) => JSON.parse(line))[0],
  );

const count413 = async (service: ServiceProcess) => {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  return [...text.matchAll(/^http_requests_total\{[^}]*status="413"[^}]*\} (\d+)$/gm)].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );
};

async function expectOwn413(
  service: ServiceProcess,
  path: string,
  headers: Record<string, string>,
  body: { chunked: number } | { declared: number },
  limit: number,
) {
  const before = await count413(service);
  const requestId = unique("big");
  const answer = await rawRequest(
    service,
    {
      method: "POST",
      path,
      "Content-Type": "application/json",
      "X-Request-Id": requestId,
      ...headers,
    },
    body,
  );
  expect(answer.status).toBe(413);
  expect(answer.headers["content-type"]).toBe("application/problem+json");
  expect(answer.headers["x-request-id"]).toBe(requestId);
  expect(JSON.parse(answer.body)).toEqual({
    type: "about:blank",
    title: "Payload Too Large",
    status: 413,
    detail: `The request body is larger than ${limit} bytes`,
  });
  expect(await logLineOf(service, requestId)).toMatchObject({ status: 413, method: "POST" });
  await eventually(async () => ((await count413(service)) > before ? true : undefined));
}

describe("bodies over the limit, from the running servers", () => {
  test("N7: the api answers a declared 20 KiB body with its own 413 problem+json, logged and counted", async () => {
    const auth = { Authorization: `Bearer ${stack.customer}` };
    await expectOwn413(stack.api, "/api/orders", auth, { declared: 20 * 1024 }, 16 * 1024);
  });

  test("N7: the api cuts a chunked body off past 16 KiB with its own 413", async () => {
    const auth = { Authorization: `Bearer ${stack.customer}` };
    await expectOwn413(stack.api, "/api/orders", auth, { chunked: 64 * 1024 }, 16 * 1024);
  });

  test("N7: payments answers a declared 70 KiB body with its own 413 problem+json, logged and counted", async () => {
    await expectOwn413(stack.payments, "/api/webhooks/payment", {}, { declared: 70 * 1024 }, 65536);
  });

  test("N7: payments cuts a chunked body off past 64 KiB with its own 413", async () => {
    await expectOwn413(stack.payments, "/api/webhooks/payment", {}, { chunked: 200 * 1024 }, 65536);
  });

  test("N7: on the api an anonymous caller with a big body gets 401: credentials come first", async () => {
    for (const body of [{ declared: 20 * 1024 }, { chunked: 64 * 1024 }]) {
      const answer = await rawRequest(
        stack.api,
        { method: "POST", path: "/api/orders", "Content-Type": "application/json" },
        body,
      );
      expect(answer.status).toBe(401);
      expect(answer.headers["content-type"]).toBe("application/problem+json");
      expect(answer.headers["www-authenticate"]).toStartWith("Bearer");
      expect(answer.headers["x-request-id"]).toBeDefined();
    }
  });

  test("N7: a body of several MiB, declared or chunked, gets the service's own 413 on every operation with a body of both services", async () => {
    const admin = { Authorization: `Bearer ${stack.admin}` };
    for (const service of [stack.api, stack.payments]) {
      const document = (await (await fetch(`${service.url}/swagger/json`)).json()) as {
        paths: Record<string, Record<string, { requestBody?: unknown }>>;
      };
      const limit = service === stack.api ? 16 * 1024 : 65536;
      let operations = 0;
      for (const [template, methods] of Object.entries(document.paths))
        for (const [method, operation] of Object.entries(methods)) {
          if (!operation.requestBody) continue;
          operations++;
          const path = template.replace(/\{[^}]+\}/g, "1");
          const size = 5 * 1024 * 1024;
          for (const body of [{ declared: size }, { chunked: size }]) {
            const requestId = unique("huge");
            const answer = await rawRequest(
              service,
              {
                method: method.toUpperCase(),
                path,
                "Content-Type": "application/json",
                "X-Request-Id": requestId,
                ...admin,
              },
              body,
            );
            expect({ path, method, status: answer.status }).toEqual({ path, method, status: 413 });
            expect(answer.headers["content-type"]).toBe("application/problem+json");
            expect(answer.headers["x-request-id"]).toBe(requestId);
            // Provider routes have larger limits of their own; the rest say the service's.
            if (!path.includes("/providers/"))
              expect(JSON.parse(answer.body).detail).toBe(
                `The request body is larger than ${limit} bytes`,
              );
          }
        }
      expect(operations).toBeGreaterThan(0);
      expect((await fetch(`${service.url}/health`)).status).toBe(200);
    }
  });
});

/** A request whose head is written as given: one header of `headerBytes` bytes. */
function bigHeader(service: ServiceProcess, headerBytes: number) {
  return rawRequest(
    service,
    {
      method: "GET",
      path: "/health",
      "X-Padding": "p".repeat(headerBytes),
      "X-Request-Id": "big-head",
    },
    { declared: 0 },
  );
}

describe("E4: every answer of the running servers is the service's own problem+json", () => {
  test("E4: a 20 KB header gets the service's 431 problem+json with X-Request-Id, on both services", async () => {
    for (const service of [stack.api, stack.payments]) {
      const answer = await bigHeader(service, 20_000);
      expect(answer.status).toBe(431);
      expect(answer.headers["content-type"]).toBe("application/problem+json");
      expect(answer.headers["x-request-id"]).toBe("big-head");
      expect(JSON.parse(answer.body)).toMatchObject({ status: 431 });
      expect((await bigHeader(service, 8_000)).status).toBe(200);
    }
  });

  test("E4: a served path asked with a method it does not serve is 405 problem+json with Allow, on every path of both services", async () => {
    const methods = ["get", "post", "put", "patch", "delete"];
    let pairs = 0;
    for (const service of [stack.api, stack.payments]) {
      const document = (await (await fetch(`${service.url}/swagger/json`)).json()) as {
        paths: Record<string, Record<string, unknown>>;
      };
      for (const [template, served] of Object.entries(document.paths)) {
        const path = template.replace(/\{[^}]+\}/g, "1");
        for (const method of methods.filter((m) => !(m in served))) {
          pairs++;
          const response = await fetch(`${service.url}${path}`, {
            method: method.toUpperCase(),
            headers: { authorization: `Bearer ${stack.admin}`, "x-request-id": `m-${pairs}` },
          });
          expect({ path, method, status: response.status }).toEqual({ path, method, status: 405 });
          expect(response.headers.get("content-type")).toBe("application/problem+json");
          expect(response.headers.get("x-request-id")).toBe(`m-${pairs}`);
          const allow = (response.headers.get("allow") ?? "").split(", ");
          for (const known of Object.keys(served).filter((m) => methods.includes(m)))
            expect(allow).toContain(known.toUpperCase());
          expect(allow).not.toContain(method.toUpperCase());
          expect(((await response.json()) as { status: number }).status).toBe(405);
        }
      }
    }
    expect(pairs).toBeGreaterThan(100);
    // An unknown path is still 404.
    const unknown = await fetch(`${stack.api.url}/api/nothing-here`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${stack.admin}` },
    });
    expect(unknown.status).toBe(404);
  });

  test("E4: encoded dot segments never reach another route than the resolved path names, and every answer carries X-Request-Id", async () => {
    // Bun resolves `..` and `%2e%2e` (as the URL standard says) before any code of the service
    // sees the request; the route that runs, and every check on it, is the one of that path.
    const anonymous = await rawRequest(
      stack.api,
      { method: "GET", path: "/api/orders/%2e%2e/cart", "X-Request-Id": "dots" },
      { declared: 0 },
    );
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers["x-request-id"]).toBe("dots");
    expect(anonymous.headers["content-type"]).toBe("application/problem+json");
    for (const path of [
      "/api/orders/%2e%2e%2fcart",
      "/api/orders/.%2e%2f1",
      "/%2e%2e/%2e%2e/etc/passwd",
    ]) {
      const answer = await rawRequest(
        stack.api,
        { method: "GET", path, Authorization: `Bearer ${stack.customer}`, "X-Request-Id": "dots2" },
        { declared: 0 },
      );
      expect([400, 404]).toContain(answer.status);
      expect(answer.headers["content-type"]).toBe("application/problem+json");
      expect(answer.headers["x-request-id"]).toBe("dots2");
    }
  });
});

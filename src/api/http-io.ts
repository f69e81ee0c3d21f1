import type { IncomingMessage, ServerResponse } from "node:http";

/** Largest request body the API reads (a task definition is a few KB). */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/** A failure with its HTTP status; the message is what the client reads (what, why, how to fix). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra headers (e.g. Allow on 405). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The request header (and response header) carrying the request id. */
export const REQUEST_ID_HEADER = "x-request-id";

/** Writes a JSON answer with the request id header. */
export function sendJson(res: ServerResponse, status: number, body: unknown, requestId: string, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body) + "\n";
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    [REQUEST_ID_HEADER]: requestId,
    ...headers,
  });
  res.end(text);
}

/** Writes an error in CTS's shape: `{"error":{"message"},"request_id"}`. */
export function sendError(res: ServerResponse, err: ApiError, requestId: string): void {
  sendJson(res, err.status, { error: { message: err.message }, request_id: requestId }, requestId, err.headers);
}

/**
 * Reads and parses a JSON body of at most `limit` bytes. Past the limit the rest is discarded
 * (not buffered) and a 413 is thrown; a Content-Length over the limit fails before reading.
 */
export async function readJsonBody(req: IncomingMessage, limit = DEFAULT_BODY_LIMIT_BYTES): Promise<unknown> {
  const tooLarge = () => new ApiError(413, `the request body is larger than ${limit} bytes. Send a smaller task definition.`);
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let overflow = false;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) overflow = true;
    if (!overflow) chunks.push(chunk);
  }
  if (overflow) throw tooLarge();
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") throw new ApiError(400, "the request body is empty. Send a JSON object.");
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ApiError(400, `the request body is not valid JSON: ${(err as Error).message}. Send a JSON object.`);
  }
}

/** Discards a body nobody reads (so keep-alive connections stay usable). */
export function drain(req: IncomingMessage): void {
  if (!req.complete) req.resume();
}

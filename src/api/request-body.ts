import { MAX_DATA_DEPTH, tooDeepAt } from "../values/data-depth.ts";
import { ApiError } from "./http-error.ts";

/** Largest request body the API reads (a task definition is a few KB). */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * How deeply a request body may nest (objects and lists; `{"task":{"variables":{}}}` is 3 levels),
 * CTS-encoded variables counted decoded. Deeper bodies are refused with 400 before anything is stored.
 */
export const MAX_BODY_DEPTH = MAX_DATA_DEPTH;

/**
 * Reads a request body of at most `limit` bytes. Past the limit (declared or streamed) the rest is
 * read and discarded, up to `discardMax` bytes, before the 413: answering while the client is still
 * sending makes the kernel reset the connection, and the client would never see the answer.
 */
export async function readLimitedBody(body: ReadableStream<Uint8Array> | null, declaredLength: string | undefined, limit: number, discardMax = 64 * 1024 * 1024): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let overflow = Number(declaredLength) > limit;
  if (body) {
    const reader = body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > limit) overflow = true;
      if (!overflow) chunks.push(value);
      if (size > discardMax) {
        await reader.cancel().catch(() => undefined);
        break;
      }
    }
  }
  if (overflow) throw new ApiError(413, `the request body is larger than ${limit} bytes. Send a smaller task definition.`);
  return Buffer.concat(chunks).toString("utf8");
}

/** Parses a request body's text as JSON, with messages that say what to send instead; refuses bodies nested too deep. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === "") throw new ApiError(400, "the request body is empty. Send a JSON object.");
  let body: unknown;
  try {
    // JSON.parse itself copes with any depth; what reads the result afterwards may not.
    body = JSON.parse(text) as unknown;
  } catch (err) {
    throw new ApiError(400, `the request body is not valid JSON: ${(err as Error).message}. Send a JSON object.`);
  }
  checkBodyDepth(body);
  return body;
}

/** 400 when a (decoded) request body nests deeper than MAX_BODY_DEPTH levels, naming where. */
export function checkBodyDepth(body: unknown): void {
  const at = tooDeepAt(body, MAX_BODY_DEPTH);
  if (at !== undefined)
    throw new ApiError(
      400,
      `the request body nests deeper than ${MAX_BODY_DEPTH} levels of objects and lists (at ${at}). Flatten the value, or send it as a JSON string and decode it in the module with jsondecode().`,
    );
}

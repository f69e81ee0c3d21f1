import type { Hono } from "hono";
import { gunzipSync } from "node:zlib";
import { ApiError, type Env, notFound, type ServerContext } from "../jsonapi.ts";
import type { RunQueue } from "../executor/run-queue.ts";
import { markUploaded } from "./configuration-versions.ts";

/**
 * TFC's archivist: signed URLs that need no token. Configuration uploads (PUT a tar.gz), logs and
 * plan JSON (GET). The secret in the path is the signature.
 */
export function archivistRoutes(app: Hono<Env>, ctx: ServerContext, queue: RunQueue): void {
  const { store } = ctx;

  app.put("/_archivist/upload/:secret", async (c) => {
    const cv = [...store.configurationVersions.values()].find((v) => v.uploadSecret === c.req.param("secret"));
    if (!cv || cv.status !== "pending" || cv.tarball) throw notFound();
    if (ctx.variants.urlencodedUpload500 && (c.req.header("content-type") ?? "").startsWith("application/x-www-form-urlencoded")) {
      throw new ApiError(500, "internal server error", "could not store the upload");
    }
    const body = Buffer.from(await c.req.arrayBuffer());
    if (!isTarGz(body)) {
      cv.status = "errored";
      cv.errorMessage = "The uploaded configuration is not a gzip-compressed tar archive.";
      return c.body(null, 200);
    }
    cv.tarball = body;
    if (cv.pendingReadsLeft === 0) markUploaded(cv, ctx, queue);
    return c.body(null, 200);
  });

  app.get("/_archivist/blob/:secret", (c) => {
    const blob = store.blobs.get(c.req.param("secret"));
    if (!blob) throw notFound();
    return c.body(blob.content, 200, { "Content-Type": blob.contentType });
  });
}

/** A gzip stream whose first block is a ustar header (what `tar czf` writes). */
function isTarGz(body: Buffer): boolean {
  try {
    const tar = gunzipSync(body);
    return tar.length >= 512 && tar.subarray(257, 262).toString("latin1") === "ustar";
  } catch {
    return false;
  }
}

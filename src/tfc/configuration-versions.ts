import { CtsError } from "../errors/cts-error.ts";
import { pause } from "../time/pause.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { packDirectory } from "./archive.ts";
import { cancelledError } from "./errors.ts";
import { one, toConfigurationVersion } from "./jsonapi.ts";
import type { Transport } from "./transport.ts";
import type { ConfigurationVersion } from "./types.ts";
import { enc } from "./workspaces.ts";

/** How long to wait for an upload to be processed (`pending` → `uploaded`). */
export interface UploadWait {
  signal?: AbortSignal;
  /** Between reads (default 500 ms). */
  intervalMs?: number;
  /** Give up after this long (default 2 min): TFC_UPLOAD_FAILED. */
  limitMs?: number;
}

/** Configuration versions: create, upload a tar.gz, wait until it is usable. */
export class ConfigurationVersions {
  constructor(private readonly t: Transport) {}

  /** Creates a configuration version; `auto-queue-runs` is always false (runs are created explicitly, as some servers ignore the flag). */
  async create(workspaceId: string, opts: { speculative?: boolean } = {}, signal?: AbortSignal): Promise<ConfigurationVersion> {
    const path = `/api/v2/workspaces/${enc(workspaceId)}/configuration-versions`;
    const body = { data: { type: "configuration-versions", attributes: { "auto-queue-runs": false, speculative: opts.speculative === true } } };
    return toConfigurationVersion(one(await this.t.json({ method: "POST", path, body, signal }), { method: "POST", path }));
  }

  /** Reads a configuration version. */
  async read(id: string, signal?: AbortSignal): Promise<ConfigurationVersion> {
    const path = `/api/v2/configuration-versions/${enc(id)}`;
    return toConfigurationVersion(one(await this.t.json({ method: "GET", path, signal, idempotent: true }), { method: "GET", path }));
  }

  /** PUTs a tar.gz to the upload URL as application/octet-stream (a form content type makes some servers fail), without the token. */
  async upload(uploadUrl: string, tarball: Buffer, signal?: AbortSignal): Promise<void> {
    await this.t.call({ method: "PUT", path: uploadUrl, body: tarball, contentType: "application/octet-stream", signal, idempotent: true });
  }

  /** Reads until the version is `uploaded`; `errored` or the limit give TFC_UPLOAD_FAILED. */
  async waitUntilUploaded(id: string, wait: UploadWait = {}): Promise<ConfigurationVersion> {
    const clock = this.t.clock;
    const deadline = clock.now() + (wait.limitMs ?? 120_000);
    for (;;) {
      const cv = await this.read(id, wait.signal);
      if (cv.status === "uploaded" || cv.status === "archived") return cv;
      if (cv.status === "errored") {
        throw new CtsError("TFC_UPLOAD_FAILED", "external", knownSecrets.redact(`Configuration version ${id} errored after its upload: ${cv.errorMessage ?? "the server gave no reason"}.`), { detail: { configurationVersion: id } });
      }
      const left = deadline - clock.now();
      if (left <= 0) throw new CtsError("TFC_UPLOAD_FAILED", "external", `Configuration version ${id} is still '${cv.status}' after ${wait.limitMs ?? 120_000} ms; the server did not process the upload.`, { detail: { configurationVersion: id } });
      if (!(await pause(Math.min(wait.intervalMs ?? 500, left), wait.signal, clock))) throw cancelledError({ method: "GET", path: `/api/v2/configuration-versions/${id}` });
    }
  }

  /** The whole step: create a version, upload `dir` as tar.gz, wait until `uploaded`. */
  async uploadDirectory(workspaceId: string, dir: string, opts: UploadWait & { speculative?: boolean } = {}): Promise<ConfigurationVersion> {
    const tarball = await packDirectory(dir);
    const cv = await this.create(workspaceId, { speculative: opts.speculative === true }, opts.signal);
    if (!cv.uploadUrl) throw new CtsError("TFC_BAD_ANSWER", "external", `Configuration version ${cv.id} came without an upload-url. Check that the hostname points at Terraform Cloud or Enterprise.`);
    await this.upload(cv.uploadUrl, tarball, opts.signal);
    return this.waitUntilUploaded(cv.id, opts);
  }
}

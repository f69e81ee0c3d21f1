import type { Server } from "node:http";
import type { Socket } from "node:net";

/**
 * How long a connection we refused stays open to read what the client still sends. Closing a socket
 * with unread bytes makes the kernel send a reset, and the client then loses our answer: Node's own
 * answer to an oversized request is lost that way. A client that neither stops nor closes is cut off.
 */
export const REFUSED_LINGER_MS = 5_000;

/** Node's `HTTPParser` error fields (`bytesParsed`, `rawPacket`: the chunk it was parsing). */
interface ParserError extends NodeJS.ErrnoException {
  bytesParsed?: number;
  rawPacket?: Buffer;
}

const LINE_END = 0x0a;

function answer(status: string, text: string): string {
  const body = `${text}\n`;
  return `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/**
 * Node reports an over-long request line and over-large headers alike as HPE_HEADER_OVERFLOW: its
 * limit counts both together. The chunk that overflowed tells them apart: a line end in it means the
 * request line had ended; the connection's first chunk without one is still the request line. A later
 * chunk without one is undecidable, and 431 stays true of it (the line counts towards the limit).
 */
function requestLineOverflowed(err: ParserError, socket: Socket): boolean {
  const chunk = err.rawPacket;
  if (!chunk) return false;
  const parsed = chunk.subarray(0, err.bytesParsed ?? chunk.length);
  return !parsed.includes(LINE_END) && socket.bytesRead === chunk.length;
}

/** The answer to a request Node's parser refused, as Node gives it, with 414 split from 431. */
export function clientErrorAnswer(err: ParserError, socket: Socket, maxHeaderSize: number): string {
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW":
      return requestLineOverflowed(err, socket)
        ? answer("414 URI Too Long", `The request line is longer than the server accepts: ${maxHeaderSize} bytes for the request line and headers together.`)
        : answer("431 Request Header Fields Too Large", `The request line and headers are larger than the server accepts: ${maxHeaderSize} bytes together.`);
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return answer("413 Payload Too Large", "A chunk extension is larger than the server accepts.");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return answer("408 Request Timeout", "The request was not sent in time.");
    default:
      return answer("400 Bad Request", "The request is not valid HTTP/1.1.");
  }
}

/**
 * Answers requests Node's parser refuses (oversized, malformed, too slow) and closes the connection
 * without a reset: the answer is written, the write side ended, and the rest of the request read and
 * dropped until the client closes (or `REFUSED_LINGER_MS` passes).
 */
export function answerClientErrors(server: Server, maxHeaderSize: number): void {
  server.on("clientError", (err: ParserError, socket: Socket) => {
    // The parser goes on failing on every later chunk of the same request: answer once.
    if (refused.has(socket)) return;
    refused.add(socket);
    if (err.code === "ECONNRESET" || !socket.writable || socket.bytesWritten > 0) {
      socket.destroy();
      return;
    }
    socket.end(clientErrorAnswer(err, socket, maxHeaderSize));
    const cutOff = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
    cutOff.unref();
    socket.once("close", () => clearTimeout(cutOff));
  });
}

const refused = new WeakSet<Socket>();

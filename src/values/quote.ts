/**
 * Characters Go's `unicode.IsPrint` refuses: everything but letters, marks, numbers, punctuation,
 * symbols and the ASCII space (newlines, tabs, NUL, other spaces, line separators, unassigned).
 */
export const UNPRINTABLE = /[^\p{L}\p{M}\p{N}\p{P}\p{S} ]/u;
const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, "gu");

/**
 * Text from outside (a catalog name) quoted for a message as JSON would, with every unprintable
 * character as `\uXXXX` (JSON.stringify leaves U+2028 or U+00A0 as they are): a newline in a
 * service name can neither break nor forge a log line.
 */
export function quote(text: string): string {
  return JSON.stringify(text).replace(UNPRINTABLE_ALL, (c) => {
    let out = "";
    for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`;
    return out;
  });
}

/**
 * Just enough markdown for the docs test: fenced blocks, inline code, links and GitHub's heading
 * anchors. Not a markdown parser; it reads the subset this repository's pages use, line by line (a
 * code span that wraps onto the next line is not seen as one).
 */

/** One line of a page, with whether it sits in a fenced block and that block's language. */
export interface PageLine {
  /** 1-based line number. */
  line: number;
  text: string;
  /** The info string of the fenced block holding the line ("" for a bare fence); undefined outside fences. */
  fence?: string;
}

/** Every line of a page, fence lines themselves left out. */
export function pageLines(page: string): PageLine[] {
  const out: PageLine[] = [];
  let fence: { marker: string; info: string } | undefined;
  page.split("\n").forEach((text, i) => {
    const opener = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(text);
    if (fence) {
      if (opener && opener[1]!.startsWith(fence.marker) && text.trim() === opener[1]) fence = undefined;
      else out.push({ line: i + 1, text, fence: fence.info });
    } else if (opener) fence = { marker: opener[1]!, info: opener[2]!.toLowerCase() };
    else out.push({ line: i + 1, text });
  });
  return out;
}

/** The inline code spans of a line outside fences (`` `x` ``, ``` ``x`` ```). */
export function inlineCode(text: string): string[] {
  return [...text.matchAll(/(`+)(.+?)\1/g)].map((m) => m[2]!.trim());
}

/** The targets of the links and images on a line outside fences, inline code left out. */
export function linkTargets(text: string): string[] {
  const prose = text.replace(/(`+)(.+?)\1/g, "");
  return [...prose.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/** A heading's anchor as GitHub makes it: the text as rendered, lower-cased, punctuation dropped, spaces to '-'. */
export function slug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links and images: their text
    .replace(/`([^`]*)`/g, "$1") // code spans: their content
    .replace(/<[^>]+>/g, "") // inline HTML
    .replace(/(\*\*|__|\*|_)(\S(?:.*?\S)?)\1/g, "$2"); // emphasis
  return rendered.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** Every anchor a page offers: its headings' slugs, repeated ones numbered as GitHub does (`x`, `x-1`, …). */
export function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text, fence } of pageLines(page)) {
    const heading = fence === undefined ? /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(text) : null;
    if (!heading) continue;
    const base = slug(heading[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

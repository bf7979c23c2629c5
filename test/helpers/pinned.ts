// A pinned answer's body as its file has it: the `release=<name>` a pinned answer adds to each of its
// links taken out again (a link ends a JSON string, or a URL in a problem's detail), written here by
// hand rather than with the edge's own code, so that a test comparing the result with the file checks
// both that links carry the release and that nothing else of the body changed.
export function withoutRelease(text: string, release: string): string {
  const param = `release=${encodeURIComponent(release)}`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text.replace(new RegExp(`[?&]${param}(?=["; ])`, 'g'), '');
}

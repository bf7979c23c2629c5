// A request's URL, parsed once per request: the server's system paths, the handler's dispatch and a
// problem answer each read it, and parsing it is one of the larger costs of a small answer. The URL
// handed out is shared: whoever reads it never changes it.
const parsed = new WeakMap<Request, URL>();

export function requestUrl(request: Request): URL {
  let url = parsed.get(request);
  if (url === undefined) {
    url = new URL(request.url);
    parsed.set(request, url);
  }
  return url;
}

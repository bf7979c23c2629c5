// The request as the edge function reads it: its method, its absolute URL and header look-ups. A Web
// Request has this shape, so the Lambda@Edge adapter and tests pass one; the Node adapter passes a
// light view over the message Node has already parsed instead of building a Web Request per request.
export interface EdgeRequest {
  readonly method: string;
  /** Absolute URL: scheme, host, path and query. */
  readonly url: string;
  readonly headers: { get(name: string): string | null };
  /** The URL's path and query (`?…`, or '' when there is none), when the adapter already has them
   * as the URL parser would give them: spares parsing `url` again. */
  readonly target?: RequestTarget;
}

export interface RequestTarget {
  readonly pathname: string;
  readonly search: string;
}

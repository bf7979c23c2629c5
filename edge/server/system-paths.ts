// The system paths of `isoatlas serve` (/health, /metrics, /admission: the first entries of the
// dispatch table, edge/contract/dispatch.ts) in front of the handler, each answered as its access
// class says.
import type { Handler, RequestContext } from '../handler.js';
import { systemPathAnswered, systemPathAt, type SystemPathId } from '../contract/dispatch.js';
import { requestUrl } from '../request-url.js';

/** One answer for each system path of the dispatch table: a path added there without one does not
 * compile. */
export type SystemAnswers = {
  readonly [id in SystemPathId]: (request: Request, context: RequestContext) => Promise<Response>;
};

/** The handler with the server's system paths in front of it, the first entries of the dispatch
 * table: a system path is answered here when its access class lets this request have it (before
 * access control: never keyed or counted), and is no endpoint otherwise. */
export function withSystemPaths(api: Handler, answers: SystemAnswers, server: { metrics: boolean }): Handler {
  return (request, context = {}) => {
    const id = systemPathAt(requestUrl(request).pathname);
    if (
      id === null ||
      !systemPathAnswered(id, { method: request.method, viaFront: context.viaFront, metrics: server.metrics })
    )
      return api(request, context);
    context.answeredBy = id;
    return answers[id](request, context);
  };
}

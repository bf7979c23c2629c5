// A small evaluator of the WAF statements and text transformations the stack's rules use, over a
// request's headers, as the synthesized template states them (CloudFormation's property names). It
// knows only what those rules use and throws on anything else, so a rule changed to use something new
// fails the tests that read it instead of being evaluated wrongly.
//
// It also models what CloudFront hands WAF of a request ("Oversize web request components in AWS
// WAF"; WAFV2 API reference, Headers and HeaderOrder): the first 200 headers and the first 8 KB of
// header contents, in the order sent. The documentation does not say what counts towards the 8 KB;
// edge/contract/header-limits.ts counts each field's whole line (name, ": ", value, CRLF), at least as
// much as any reading of "header contents", so the part modelled as inspected ends no later than
// AWS's: a header is never taken for seen here when WAF might not see it. A field cut by the byte bound
// is handed over cut, as far as its bytes fit (the documentation says only "at most 8 KB"); a header
// beyond the bounds is missing, and a rate rule whose custom key lies there omits the request.
import { type HeaderField, withinHeaderLimits } from '../../edge/contract/header-limits.js';

/** A request as WAF's header inspection sees it: names lower case, each value as sent. */
export type WafHeaders = Record<string, string[]>;

/** What WAF is handed of a request: its headers within the bounds, and whether any were left out. */
export interface WafRequest {
  headers: WafHeaders;
  oversize: boolean;
}

type Transformation = { Priority: number; Type: string };

/** Applies text transformations lowest priority first, as WAF does. */
export function transform(text: string, transformations: Transformation[]): string {
  return [...transformations]
    .sort((a, b) => a.Priority - b.Priority)
    .reduce((t, { Type }) => {
      if (Type === 'NONE') return t;
      // WAF's LOWERCASE converts A-Z only.
      if (Type === 'LOWERCASE') return t.replace(/[A-Z]/g, (c) => c.toLowerCase());
      throw new Error(`the WAF evaluator does not know the text transformation ${Type}`);
    }, text);
}

/** The first `bytes` UTF-8 bytes of `text`, never half a character. */
function utf8Prefix(text: string, bytes: number): string {
  let out = '';
  let used = 0;
  for (const c of text) {
    used += Buffer.byteLength(c);
    if (used > bytes) break;
    out += c;
  }
  return out;
}

/** What CloudFront hands WAF of header fields sent in this order (HEADER_LIMITS, by header-limits.ts'
 * accounting): the fields that fit whole, then the next one cut to the bytes left, if its name fits. */
export function forwardedToWaf(fields: readonly HeaderField[]): WafRequest {
  const { whole, room } = withinHeaderLimits(fields);
  const seen: [string, string][] = fields.slice(0, whole).map(([n, v]) => [n, v]);
  if (whole < fields.length && room > 0) {
    const [name, value] = fields[whole];
    const left = room - Buffer.byteLength(name) - 4;
    if (left >= 0) seen.push([name, utf8Prefix(value, left)]);
  }
  const headers: WafHeaders = {};
  for (const [name, value] of seen) (headers[name.toLowerCase()] ??= []).push(value);
  return { headers, oversize: whole < fields.length };
}

/** A request whose headers WAF sees whole (no bound reached). */
export const whole = (headers: WafHeaders): WafRequest => ({ headers, oversize: false });

function singleHeader(field: any, headers: WafHeaders): string | undefined {
  const name = field?.SingleHeader?.Name;
  if (typeof name !== 'string')
    throw new Error(`the WAF evaluator inspects single headers only here, not ${JSON.stringify(field)}`);
  // A header sent more than once: this evaluator takes the first value; the gate refuses such requests.
  return headers[name.toLowerCase()]?.[0];
}

/** The texts an all-headers field inspects (names, values or both, as its match scope says), or the
 * verdict its oversize handling gives when WAF was not handed them all. */
function allHeaders(field: any, request: WafRequest): string[] | boolean {
  const { MatchPattern, MatchScope, OversizeHandling } = field;
  if (!MatchPattern?.All || Object.keys(MatchPattern).length !== 1)
    throw new Error(`the WAF evaluator inspects all headers only, not ${JSON.stringify(MatchPattern)}`);
  if (!['ALL', 'KEY', 'VALUE'].includes(MatchScope))
    throw new Error(`the WAF evaluator does not know the match scope ${MatchScope}`);
  if (!['CONTINUE', 'MATCH', 'NO_MATCH'].includes(OversizeHandling))
    throw new Error(`the WAF evaluator does not know the oversize handling ${OversizeHandling}`);
  if (request.oversize && OversizeHandling !== 'CONTINUE') return OversizeHandling === 'MATCH';
  const texts: string[] = [];
  for (const [name, values] of Object.entries(request.headers))
    for (const value of values) {
      if (MatchScope !== 'VALUE') texts.push(name);
      if (MatchScope !== 'KEY') texts.push(value);
    }
  return texts;
}

function sizeMatches(s: any, size: number): boolean {
  if (s.ComparisonOperator === 'GT') return size > s.Size;
  throw new Error(`the WAF evaluator does not know the size comparison ${s.ComparisonOperator}`);
}

/** Does the statement match the request? */
export function matches(statement: any, r: WafRequest): boolean {
  if (statement.AndStatement) return statement.AndStatement.Statements.every((s: any) => matches(s, r));
  if (statement.OrStatement) return statement.OrStatement.Statements.some((s: any) => matches(s, r));
  if (statement.NotStatement) return !matches(statement.NotStatement.Statement, r);
  if (statement.SizeConstraintStatement) {
    const s = statement.SizeConstraintStatement;
    if (s.FieldToMatch?.Headers) {
      // The documentation does not say how a size is taken of all headers: here each name and value
      // apart, as a match scope of ALL "requires a match to be found in the keys or the values".
      const texts = allHeaders(s.FieldToMatch.Headers, r);
      if (typeof texts === 'boolean') return texts;
      return texts.some((t) => sizeMatches(s, Buffer.byteLength(transform(t, s.TextTransformations))));
    }
    const value = singleHeader(s.FieldToMatch, r.headers);
    if (value === undefined) return false; // a missing header does not match
    return sizeMatches(s, Buffer.byteLength(transform(value, s.TextTransformations)));
  }
  if (statement.RegexMatchStatement) {
    const s = statement.RegexMatchStatement;
    const value = singleHeader(s.FieldToMatch, r.headers);
    return value !== undefined && new RegExp(s.RegexString).test(transform(value, s.TextTransformations));
  }
  throw new Error(`the WAF evaluator does not know the statement ${Object.keys(statement).join(', ')}`);
}

/** The aggregation instance a rate-based statement counts the request in, or null when it does not
 * count it (outside its scope-down, or a custom key's component missing). */
export function aggregationKey(rate: any, r: WafRequest, ip = '198.51.100.7'): string | null {
  if (rate.ScopeDownStatement && !matches(rate.ScopeDownStatement, r)) return null;
  if (rate.AggregateKeyType === 'IP') return `ip:${ip}`;
  if (rate.AggregateKeyType !== 'CUSTOM_KEYS')
    throw new Error(`the WAF evaluator does not know the aggregation ${rate.AggregateKeyType}`);
  const parts: string[] = [];
  for (const key of rate.CustomKeys) {
    if (!key.Header)
      throw new Error(`the WAF evaluator aggregates on headers only, not ${Object.keys(key).join(', ')}`);
    const value = r.headers[key.Header.Name.toLowerCase()]?.[0];
    if (value === undefined) return null; // WAF omits requests missing a key's component
    parts.push(transform(value, key.Header.TextTransformations));
  }
  return JSON.stringify(parts);
}

/** What a web ACL's rules do with a request: the rule that blocked it (null: none did), and the
 * aggregation instance each rate rule it reached counted it in. Rules run lowest priority first; a
 * blocking rule that matches ends the evaluation, and a rate rule counts the request and lets it go on
 * (only its limit, which this evaluator does not model, makes it block). */
export function evaluateWebAcl(
  rules: any[],
  request: WafRequest,
  ip = '198.51.100.7',
): { blockedBy: string | null; counted: Record<string, string> } {
  const counted: Record<string, string> = {};
  for (const rule of [...rules].sort((a, b) => a.Priority - b.Priority)) {
    const rate = rule.Statement.RateBasedStatement;
    if (!rule.Action?.Block) throw new Error(`the WAF evaluator knows Block actions only, not ${rule.Name}'s`);
    if (rate) {
      const key = aggregationKey(rate, request, ip);
      if (key !== null) counted[rule.Name] = key;
    } else if (matches(rule.Statement, request)) return { blockedBy: rule.Name, counted };
  }
  return { blockedBy: null, counted };
}

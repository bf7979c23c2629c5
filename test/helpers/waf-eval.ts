// A small evaluator of the WAF statements and text transformations the stack's access rules use, over
// a request's headers, as the synthesized template states them (CloudFormation's property names). It
// knows only what those rules use and throws on anything else, so a rule changed to use something new
// fails the tests that read it instead of being evaluated wrongly.

/** A request as WAF's header inspection sees it: names lower case, each value as sent. */
export type WafHeaders = Record<string, string[]>;

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

function singleHeader(field: any, headers: WafHeaders): string | undefined {
  const name = field?.SingleHeader?.Name;
  if (typeof name !== 'string')
    throw new Error(`the WAF evaluator inspects single headers only, not ${JSON.stringify(field)}`);
  // A header sent more than once: this evaluator takes the first value; the gate refuses such requests.
  return headers[name.toLowerCase()]?.[0];
}

/** Does the statement match the request? */
export function matches(statement: any, headers: WafHeaders): boolean {
  if (statement.AndStatement) return statement.AndStatement.Statements.every((s: any) => matches(s, headers));
  if (statement.OrStatement) return statement.OrStatement.Statements.some((s: any) => matches(s, headers));
  if (statement.NotStatement) return !matches(statement.NotStatement.Statement, headers);
  if (statement.SizeConstraintStatement) {
    const s = statement.SizeConstraintStatement;
    const value = singleHeader(s.FieldToMatch, headers);
    if (value === undefined) return false; // a missing header does not match (its OversizeHandling aside)
    const size = Buffer.byteLength(transform(value, s.TextTransformations));
    if (s.ComparisonOperator === 'GT') return size > s.Size;
    throw new Error(`the WAF evaluator does not know the size comparison ${s.ComparisonOperator}`);
  }
  if (statement.RegexMatchStatement) {
    const s = statement.RegexMatchStatement;
    const value = singleHeader(s.FieldToMatch, headers);
    return value !== undefined && new RegExp(s.RegexString).test(transform(value, s.TextTransformations));
  }
  throw new Error(`the WAF evaluator does not know the statement ${Object.keys(statement).join(', ')}`);
}

/** The aggregation instance a rate-based statement counts the request in, or null when it does not
 * count it (outside its scope-down, or a custom key's component missing). */
export function aggregationKey(rate: any, headers: WafHeaders, ip = '198.51.100.7'): string | null {
  if (rate.ScopeDownStatement && !matches(rate.ScopeDownStatement, headers)) return null;
  if (rate.AggregateKeyType === 'IP') return `ip:${ip}`;
  if (rate.AggregateKeyType !== 'CUSTOM_KEYS')
    throw new Error(`the WAF evaluator does not know the aggregation ${rate.AggregateKeyType}`);
  const parts: string[] = [];
  for (const key of rate.CustomKeys) {
    if (!key.Header)
      throw new Error(`the WAF evaluator aggregates on headers only, not ${Object.keys(key).join(', ')}`);
    const value = headers[key.Header.Name.toLowerCase()]?.[0];
    if (value === undefined) return null; // WAF omits requests missing a key's component
    parts.push(transform(value, key.Header.TextTransformations));
  }
  return JSON.stringify(parts);
}

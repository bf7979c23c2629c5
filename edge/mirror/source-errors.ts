// A mirror's source that cannot be read, said as an operator can act on it: which source (and the
// S3 endpoint it is reached through), what failed (connection refused, a name not found, no answer
// in time, a TLS failure, an error answer) and what to check. Exit code 4 (StorageError).
import type { OriginError } from '../origin.js';
import { StorageError } from '../../build/common/storage-errors.js';

const TLS = /^(ERR_SSL_|ERR_TLS_|EPROTO$|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_OSSL_)/;

/** The cause in words and what to check, by the network's code (or the origin's kind of failure). */
function cause(err: OriginError, option: string): { what: string; todo: string } {
  const code = err.code ?? '';
  const tag = code ? ` (${code})` : '';
  if (code === 'ECONNREFUSED')
    return {
      what: `connection refused${tag}: nothing listens there`,
      todo: `start the source, or correct the host and port in ${option}`,
    };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return {
      what: `host name not found${tag}`,
      todo: `correct the host name in ${option}, or check this machine's DNS`,
    };
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH')
    return { what: `host unreachable${tag}`, todo: 'check the network path to it (routes, VPN, firewall)' };
  if (code === 'ECONNRESET')
    return {
      what: `connection reset${tag}`,
      todo: 'check that it is the right port and that no proxy or firewall cuts the connection',
    };
  if (TLS.test(code)) {
    return {
      what: `TLS failed${tag}`,
      todo: `write http:// in ${option} for a source that serves plain HTTP; for https, check its certificate (a private CA: set NODE_EXTRA_CA_CERTS)`,
    };
  }
  if (err.kind === 'timeout' || code === 'ETIMEDOUT')
    return {
      what: `no answer in time${tag}`,
      todo: 'the source or the network is slow or down: try again later, or check a firewall that drops packets',
    };
  if (err.kind === 'overloaded')
    return {
      what: 'busy (it kept answering 429 or 503)',
      todo: 'try again later, or ask its operator for a higher allowance',
    };
  return { what: 'it answered with an error', todo: 'the source is up but failing: read its log, or try again later' };
}

/** `source` is --from as given; `endpoint` the S3 endpoint (--endpoint) for an s3:// source. */
export function sourceError(err: OriginError, source: string, endpoint?: string): StorageError {
  const s3 = source.startsWith('s3://');
  const { what, todo } = cause(err, s3 && endpoint ? '--endpoint' : '--from');
  const at = s3 ? ` at ${endpoint ?? 'AWS S3'}` : '';
  return new StorageError(`cannot read the source ${source}${at}: ${what} (${err.message}). To fix: ${todo}`);
}

// How long gc leaves unreferenced objects alone, apart from gc itself so that the command line can
// name the figures without loading the S3 client.

/** Longer than the API's longest cache lifetime at the CDN (a day) with room to spare. */
export const DEFAULT_GRACE_HOURS = 48;

/** The shortest grace gc accepts without --force: the API's longest cache lifetime at the CDN (a
 * day), which is also far longer than any publish or rollback takes from reading the history to
 * moving the pointer. */
export const SAFE_GRACE_HOURS = 24;

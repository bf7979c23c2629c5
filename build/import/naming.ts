// Transcript names. The GTF's transcript_name is used where present. Otherwise names are generated
// deterministically, in the style of Ensembl but never colliding with it:
//   reference isoforms: SYMBOL-201, SYMBOL-202, … numbered per symbol in (gene id, transcript id) order;
//   long-read isoforms: SYMBOL-LR1, SYMBOL-LR2, … numbered per symbol in natural PB id order.
// Numbering is per symbol, not per gene, so genes sharing a symbol (Y_RNA) still get unique names.
// Names are unique case-insensitively across the release, because the API resolves them in any case.
import { BadInputError } from '../common/errors.js';
import { compareNatural, type GeneRecord, type IsoformRecord } from '../release-db/records.js';

export class NamingError extends BadInputError {}

export function assignTranscriptNames(isoforms: IsoformRecord[], genes: Map<string, GeneRecord>): void {
  const taken = new Map<string, string>(); // lower-cased name → transcript id
  const claim = (name: string, transcriptId: string) => {
    const key = name.toLowerCase();
    const holder = taken.get(key);
    if (holder !== undefined) {
      throw new NamingError(
        `transcript name "${name}" is used by both ${holder} and ${transcriptId}; transcript names must be unique (case-insensitively)`,
      );
    }
    taken.set(key, transcriptId);
  };
  for (const iso of isoforms) if (iso.transcript_name !== null) claim(iso.transcript_name, iso.transcript_id);

  const unnamed = isoforms.filter((i) => i.transcript_name === null);
  const groups = new Map<string, IsoformRecord[]>();
  for (const iso of unnamed) {
    const symbol = genes.get(iso.gene_id)!.symbol;
    const key = `${iso.source}\u0000${symbol}`;
    const list = groups.get(key);
    if (list) list.push(iso);
    else groups.set(key, [iso]);
  }
  for (const key of [...groups.keys()].sort()) {
    const [source, symbol] = key.split('\u0000');
    const list = groups.get(key)!;
    const isReference = source === 'reference';
    list.sort((a, b) =>
      isReference
        ? a.gene_id < b.gene_id
          ? -1
          : a.gene_id > b.gene_id
            ? 1
            : a.transcript_id < b.transcript_id
              ? -1
              : 1
        : compareNatural(a.transcript_id, b.transcript_id),
    );
    let n = isReference ? 201 : 1;
    for (const iso of list) {
      let name: string;
      do name = isReference ? `${symbol}-${n++}` : `${symbol}-LR${n++}`;
      while (taken.has(name.toLowerCase()));
      iso.transcript_name = name;
      iso.transcript_name_source = 'generated';
      claim(name, iso.transcript_id);
    }
  }
}

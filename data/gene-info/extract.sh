#!/bin/sh
# Re-creates org.Hs.eg.db.chr22.tsv.gz: the genes of the demo release (the Ensembl gene ids of the
# chr22 GENCODE v38 GTF) as Bioconductor's org.Hs.eg.db describes them, in isoatlas's gene-info TSV
# format (data/README.md). A gene is tied to its NCBI Gene record by org.Hs.eg.db's own Ensembl link
# (matched_by "ensembl"); a gene without one, by its GTF gene name equal to an NCBI symbol
# (matched_by "symbol"). Each row also says where the NCBI record itself lies and which Ensembl genes
# org.Hs.eg.db links it to (record_chromosomes, record_ensembl_ids), so the import can refuse a match
# that ties the record to another gene. Needs Debian's r-bioc-org.hs.eg.db and sqlite3:
#   apt-get install r-bioc-org.hs.eg.db sqlite3 && data/gene-info/extract.sh
set -eu
DB=${1:-/usr/lib/R/site-library/org.Hs.eg.db/extdata/org.Hs.eg.sqlite}
HERE=$(cd "$(dirname "$0")" && pwd)
IDS=$(mktemp)
trap 'rm -f "$IDS"' EXIT
# Ensembl gene id (unversioned) and GTF gene name of every gene of the demo GTF.
zcat "$HERE/../chr22/gencode.v38.basic_chr22_corrected.gtf.gz" |
  sed -n 's/.*gene_id "\(ENSG[0-9]*\)[^"]*"; gene_name "\([^"]*\)".*/\1\t\2/p' | sort -u > "$IDS"
{
  printf 'ensembl_gene_id\tncbi_gene_id\thgnc_id\tsymbol\tname\tgene_type\tsynonyms\tuniprot_ids\tmatched_by\trecord_chromosomes\trecord_ensembl_ids\n'
  sqlite3 -batch -noheader -separator '	' "$DB" <<SQL
CREATE TEMP TABLE wanted (ensembl_id TEXT PRIMARY KEY, gene_name TEXT);
.mode tabs
.import $IDS wanted
CREATE TEMP TABLE matched AS
  SELECT w.ensembl_id, e._id, 'ensembl' AS matched_by FROM wanted w JOIN ensembl e ON e.ensembl_id = w.ensembl_id;
INSERT INTO matched
  SELECT w.ensembl_id, i._id, 'symbol' FROM wanted w JOIN gene_info i ON i.symbol = w.gene_name
  WHERE w.ensembl_id NOT IN (SELECT ensembl_id FROM matched);
SELECT m.ensembl_id, g.gene_id, '', i.symbol, i.gene_name, coalesce(t.gene_type, ''),
       coalesce((SELECT group_concat(alias_symbol, '|') FROM (SELECT alias_symbol FROM alias a WHERE a._id = g._id AND a.alias_symbol <> i.symbol ORDER BY alias_symbol)), ''),
       coalesce((SELECT group_concat(uniprot_id, '|') FROM (SELECT DISTINCT uniprot_id FROM uniprot u WHERE u._id = g._id ORDER BY uniprot_id)), ''),
       m.matched_by,
       coalesce((SELECT group_concat(chromosome, '|') FROM (SELECT DISTINCT chromosome FROM chromosomes c WHERE c._id = g._id ORDER BY chromosome)), ''),
       coalesce((SELECT group_concat(ensembl_id, '|') FROM (SELECT DISTINCT ensembl_id FROM ensembl e WHERE e._id = g._id ORDER BY ensembl_id)), '')
FROM matched m
JOIN genes g ON g._id = m._id
JOIN gene_info i ON i._id = g._id
LEFT JOIN genetype t ON t._id = g._id
ORDER BY m.ensembl_id, CAST(g.gene_id AS INTEGER);
SQL
} | gzip -9n > "$HERE/org.Hs.eg.db.chr22.tsv.gz"
echo "wrote $HERE/org.Hs.eg.db.chr22.tsv.gz: $(zcat "$HERE/org.Hs.eg.db.chr22.tsv.gz" | tail -n +2 | wc -l) rows for $(wc -l < "$IDS") Ensembl gene ids"

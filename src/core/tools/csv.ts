/**
 * CSV text and rows (RFC 4180), the format the agents' workspace files, the SQL tool's tables and the
 * data team's tasks share.
 *
 * For: `toCsv(rows)`, `parseCsv(text)`, `parseCsvRecords(text)`. Not for: reading tables into a
 * database (sql-tables.ts).
 * Example: toCsv([['a', 'b'], [1, 'x,y']]) -> 'a,b\n1,"x,y"\n';  parseCsv('a,b\n1,"x,y"\n') -> [['a', 'b'], ['1', 'x,y']]
 */

export type CsvCell = string | number | null | undefined;

/** Rows to CSV text: fields joined by ",", quoted when they hold a comma, quote, line break or
 *  outer space ("" escapes a quote); null/undefined become an empty field. Ends with "\n".
 *  toCsv([['a', 'b'], [1, 'x,y']]) === 'a,b\n1,"x,y"\n'. */
export function toCsv(rows: readonly (readonly CsvCell[])[]): string {
  const field = (cell: CsvCell) => {
    const text = cell === null || cell === undefined ? '' : String(cell);
    return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return rows.map((row) => row.map(field).join(',')).join('\n') + '\n';
}

/** CSV text to rows of strings (RFC 4180: quoted fields may hold commas, "" and line breaks;
 *  \n or \r\n line ends; a final line break does not add an empty row).
 *  parseCsv('a,b\n1,"x,y"\n') -> [['a', 'b'], ['1', 'x,y']]. Throws on an unclosed quote. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let inQuotes = false;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (inQuotes) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (ch === '"') inQuotes = false;
      else field += ch;
      i++;
      continue;
    }
    if (ch === '"' && field === '') inQuotes = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      if (ch === '\r' && text[i + 1] === '\n') i++;
    } else field += ch;
    i++;
  }
  if (inQuotes) throw new Error('parseCsv: unclosed quoted field at end of input');
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** Header plus rows keyed by column name. */
export function parseCsvRecords(text: string): { header: string[]; records: Record<string, string>[] } {
  const [header = [], ...rows] = parseCsv(text);
  return { header, records: rows.map((r) => Object.fromEntries(header.map((h, j) => [h, r[j] ?? '']))) };
}

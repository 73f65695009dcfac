// What the store holds: the browser test and benchmark compare the page with
// it. Environment: ES (the Elasticsearch URL) and INDICES (the index
// pattern), or STORE (an embedded store's directory, read with sqlite3).
import {execFile} from 'node:child_process';
import {readdirSync} from 'node:fs';

// Whether an event with these fields' values ({field: value}) is stored.
export async function searchable(fields) {
  const names = Object.keys(fields);
  if (process.env.STORE) {
    const where = names.map(f => `"${f}" = '${String(fields[f]).replaceAll("'", "''")}'`).join(' AND ');
    for (const file of readdirSync(process.env.STORE).filter(f => f.endsWith('.pano.sqlite'))) {
      const n = await new Promise(resolve => execFile('sqlite3',
        [`file:${process.env.STORE}/${file}?mode=ro`, `SELECT count(*) FROM events WHERE ${where}`],
        (err, out) => resolve(err ? 0 : Number(out))));
      if (n > 0) return true;
    }
    return false;
  }
  const q = names.map(f => `${f}:"${fields[f]}"`).join(' AND ');
  const r = await fetch(`${process.env.ES}/${process.env.INDICES}/_count?q=${encodeURIComponent(q)}`);
  return (await r.json()).count > 0;
}

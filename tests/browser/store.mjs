// What Elasticsearch finds: the browser test and benchmark compare the page
// with it. Environment: ES (the Elasticsearch URL), INDICES (the index pattern).

// Whether a query string query finds at least one document.
export async function searchable(query) {
  const r = await fetch(`${process.env.ES}/${process.env.INDICES}/_count?q=${encodeURIComponent(query)}`);
  return (await r.json()).count > 0;
}

// Preloaded by run.sh (node --import) when a bearer token or extra headers are given: the
// conformance CLI has no option for request headers, so this adds them to every HTTP request it
// makes to the server under test (both its fetch() calls and its undici.request() calls go through
// undici's global dispatcher). Requests to any other origin are left alone.
//
//   MCP_CONFORMANCE_TARGET   the server URL (only its origin is used)
//   MCP_CONFORMANCE_BEARER   token: adds "Authorization: Bearer <token>" unless a request sets one
//   MCP_CONFORMANCE_HEADERS  JSON object of further headers, e.g. {"X-Test": "1"}
//   MCP_CONFORMANCE_UNDICI   path of the conformance package's undici entry point
import { pathToFileURL } from 'node:url';

const undici = await import(pathToFileURL(process.env.MCP_CONFORMANCE_UNDICI).href);
const target = new URL(process.env.MCP_CONFORMANCE_TARGET).origin;
const extra = JSON.parse(process.env.MCP_CONFORMANCE_HEADERS || '{}');
if (process.env.MCP_CONFORMANCE_BEARER) {
  extra.Authorization = `Bearer ${process.env.MCP_CONFORMANCE_BEARER}`;
}

function withExtra(headers) {
  // undici passes headers as an object, a flat [k, v, k, v] array or an iterable of pairs.
  let pairs = [];
  if (headers == null) pairs = [];
  else if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) pairs = headers.map(([k, v]) => [k, v]);
    else for (let i = 0; i < headers.length; i += 2) pairs.push([headers[i], headers[i + 1]]);
  } else if (typeof headers[Symbol.iterator] === 'function') pairs = [...headers];
  else pairs = Object.entries(headers);
  const present = new Set(pairs.map(([k]) => String(k).toLowerCase()));
  for (const [k, v] of Object.entries(extra)) {
    if (!present.has(k.toLowerCase())) pairs.push([k, v]);
  }
  return pairs.flat();
}

const inject = (dispatch) => (opts, handler) => {
  if (String(opts.origin ?? '').replace(/\/$/, '') === target) {
    opts = { ...opts, headers: withExtra(opts.headers) };
  }
  return dispatch(opts, handler);
};

undici.setGlobalDispatcher(new undici.Agent().compose(inject));

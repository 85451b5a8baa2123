// Drives hostcore's OAuth through the official TypeScript SDK's own OAuth support (what the MCP
// Inspector, mcp-remote, Claude Code and Cursor use): 401, discovery, registration (a client ID
// metadata document when clientMetadataUrl is given, else DCR), PKCE, consent, token, tool calls,
// step-up after insufficient_scope, refresh. Used by test_e2e.py.
//
//   node ts_oauth.mjs < {"url", "cookie", "redirectUrl", "clientMetadataUrl"?, "consents": [["read"], ...], "slug", "expirySeconds"}
//
// The browser is played by redirectToAuthorization: it opens the consent page with the signed-in
// person's session cookie, approves the next scopes of "consents" and keeps the code.
//
//   HOSTCORE_TS_SDK   the @modelcontextprotocol/sdk package folder (pinned by tests/conformance)
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const sdk = (path) => import(pathToFileURL(`${process.env.HOSTCORE_TS_SDK}/dist/esm/${path}`).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { UnauthorizedError } = await sdk('client/auth.js');

const input = JSON.parse(readFileSync(0, 'utf-8'));
const log = [];
const pending = [];
const consents = [...input.consents];

const store = {};
const provider = {
  get redirectUrl() { return input.redirectUrl; },
  clientMetadataUrl: input.clientMetadataUrl,
  get clientMetadata() {
    return { client_name: 'TS E2E', redirect_uris: [input.redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
             response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  state: () => 'ts-state-' + consents.length,
  clientInformation: () => store.client,
  saveClientInformation: (info) => { store.client = info; log.push({ event: 'client', client_id: info.client_id }); },
  tokens: () => store.tokens,
  saveTokens: (tokens) => { store.tokens = tokens; log.push({ event: 'tokens', scope: tokens.scope }); },
  saveCodeVerifier: (v) => { store.verifier = v; },
  codeVerifier: () => store.verifier,
  async redirectToAuthorization(url) {
    log.push({ event: 'authorize', challenge_method: url.searchParams.get('code_challenge_method'),
               resource: url.searchParams.get('resource'), scope: url.searchParams.get('scope') });
    const page = await fetch(url, { headers: { Cookie: input.cookie }, redirect: 'manual' });
    const html = await page.text();
    const csrf = html.match(/name="csrf_token" value="([^"]+)"/)[1];
    const form = new URLSearchParams({ csrf_token: csrf, decision: 'approve' });
    for (const s of consents.shift()) form.append('grant_scope', s);
    form.append('grant_namespace', '*');
    const answer = await fetch(url, { method: 'POST', body: form, redirect: 'manual',
      headers: { Cookie: input.cookie, 'Content-Type': 'application/x-www-form-urlencoded' } });
    const back = new URL(answer.headers.get('location'));
    if (back.searchParams.get('state') !== url.searchParams.get('state')) throw new Error('state not round-tripped');
    pending.push(back.searchParams.get('code'));
  },
};

function newTransport() {
  return new StreamableHTTPClientTransport(new URL(input.url), { authProvider: provider });
}

// SDK 1.32.2 answers a 403 insufficient_scope by refreshing the token (which cannot widen its
// scope) and then gives up (typescript-sdk issue #2255, fixed by its PR #2346); an app works
// around it by dropping the tokens, so the next try starts a new authorization with the scope.
async function withAuth(transport, fn) {
  for (let tries = 0; tries < 3; tries++) {
    try {
      return await fn();
    } catch (err) {
      if (String(err?.message).includes('after trying upscoping')) {
        log.push({ event: 'step-up-workaround' });
        store.tokens = undefined;
      } else if (err instanceof UnauthorizedError && pending.length) {
        await transport.finishAuth(pending.shift());
      } else {
        throw err;
      }
    }
  }
  throw new Error('no authorization after three tries');
}

const out = { log };
let transport = newTransport();
let client = new Client({ name: 'hostcore-e2e-ts-oauth', version: '1.0.0' });
try {
  await client.connect(transport);
} catch (err) {
  if (!(err instanceof UnauthorizedError)) throw err;
  out.first = 'unauthorized';
  await transport.finishAuth(pending.shift());
  transport = newTransport();
  client = new Client({ name: 'hostcore-e2e-ts-oauth', version: '1.0.0' });
  await client.connect(transport);
}
await client.listTools();
out.read = await client.callTool({ name: 'read_page', arguments: { slug: 'notes/index' } });
out.write = await withAuth(transport, () => client.callTool({ name: 'save_page', arguments: { slug: input.slug, body: 'written by TS' } }));
const before = store.tokens.access_token;
await new Promise((r) => setTimeout(r, input.expirySeconds * 1000));
out.afterExpiry = await client.callTool({ name: 'read_page', arguments: { slug: input.slug } });
out.refreshed = store.tokens.access_token !== before;
out.tokens = store.tokens;
out.client_id = store.client.client_id;
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');

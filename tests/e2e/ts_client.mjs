// Drives a hostcore server through the official TypeScript SDK client, as the MCP Inspector,
// mcp-remote (Claude Desktop), Claude Code and Cursor do: connect, tools/list (which arms the
// client's output-schema checks), then callTool. Used by tests/e2e/test_clients.py.
//
//   node ts_client.mjs < {"url": "...", "sessions": [{"token": "...", "calls": [{"name": "...", "arguments": {...}}]}]}
//
// Prints one JSON array (one entry per call, in order): {"result": CallToolResult} when callTool
// returned, {"thrown": message, "code": JSON-RPC code} when the client raised.
//
//   HOSTCORE_TS_SDK   the @modelcontextprotocol/sdk package folder (pinned by tests/conformance)
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const sdk = (path) => import(pathToFileURL(`${process.env.HOSTCORE_TS_SDK}/dist/esm/${path}`).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');

const { url, sessions } = JSON.parse(readFileSync(0, 'utf-8'));
const out = [];
for (const { token, calls } of sessions) {
  const client = new Client({ name: 'hostcore-e2e-typescript', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  await client.listTools();
  for (const { name, arguments: args } of calls) {
    try {
      out.push({ result: await client.callTool({ name, arguments: args }) });
    } catch (err) {
      out.push({ thrown: String(err?.message ?? err), code: err?.code ?? null });
    }
  }
  await client.close();
}
process.stdout.write(JSON.stringify(out) + '\n');

// Drives a hostcore server through the official TypeScript SDK client, as the MCP Inspector,
// mcp-remote (Claude Desktop), Claude Code and Cursor do: connect, tools/list (which arms the
// client's output-schema checks), then callTool. Used by tests/e2e/test_clients.py and others.
//
//   node ts_client.mjs < {"url": "...", "sessions": [{"token": "...", "calls": [{"name": "...", "arguments": {...}}]}]}
//
// A session with "stdio": {"command", "args", "env"} instead starts that command and talks to it
// over its stdin and stdout (StdioClientTransport, as Claude Desktop starts a local server). A call
// with "method" runs another client method with "params" instead of callTool: listResources,
// listResourceTemplates, readResource, listPrompts, getPrompt, getInstructions (the server's
// instructions from the handshake), or listAllResources (listResources along every nextCursor:
// {resources, pages}).
//
// Prints one JSON array (one entry per call, in order): {"result": ...} when the method returned,
// {"thrown": message, "code": JSON-RPC code, "data": its data} when the client raised.
//
//   HOSTCORE_TS_SDK   the @modelcontextprotocol/sdk package folder (pinned by tests/conformance)
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const sdk = (path) => import(pathToFileURL(`${process.env.HOSTCORE_TS_SDK}/dist/esm/${path}`).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { StdioClientTransport } = await sdk('client/stdio.js');

const { url, sessions } = JSON.parse(readFileSync(0, 'utf-8'));
const out = [];
for (const { token, calls, stdio } of sessions) {
  const client = new Client({ name: 'hostcore-e2e-typescript', version: '1.0.0' });
  const transport = stdio
    ? new StdioClientTransport({ command: stdio.command, args: stdio.args, env: stdio.env, stderr: 'inherit' })
    : new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      });
  await client.connect(transport);
  await client.listTools();
  for (const { name, arguments: args, method, params } of calls) {
    try {
      if (method === 'getInstructions') {
        out.push({ result: client.getInstructions() ?? null });
      } else if (method === 'listAllResources') {
        const resources = [];
        let cursor, pages = 0;
        do {
          const page = await client.listResources(cursor ? { cursor } : {});
          resources.push(...page.resources);
          cursor = page.nextCursor;
          pages += 1;
        } while (cursor && pages < 1000);
        out.push({ result: { resources, pages } });
      } else if (method) {
        out.push({ result: await client[method](params) });
      } else {
        out.push({ result: await client.callTool({ name, arguments: args }) });
      }
    } catch (err) {
      out.push({ thrown: String(err?.message ?? err), code: err?.code ?? null, data: err?.data ?? null });
    }
  }
  await client.close();
}
process.stdout.write(JSON.stringify(out) + '\n');

// SPDX-License-Identifier: MIT
// tests/mcp/sdk.test.mjs - the MCP endpoint with the official TypeScript
// SDK's client (@modelcontextprotocol/sdk, its Streamable HTTP transport,
// a bearer token), against the real service that serve.py brought up
// (a site nginx with the rendered snippets, under a URL prefix): issue
// 36's acceptance - list the tools, create a thread, run
// python3 -c 'print(6*7)', write, edit, read, glob and grep a file, start
// and stop a background process - and the SDK's view of progress, tool
// errors, another user's thread, a missing token and ending a session.
//
// environment: YUXI_MCP_URL (the endpoint), YUXI_MCP_TOKEN and
// YUXI_MCP_TOKEN_BOB (two users' bearer tokens), NODE_EXTRA_CA_CERTS
// (the service's certificate). Run by run-mcp.sh with `node --test`.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.env.YUXI_MCP_URL);
const TOOLS = ['create_thread', 'list_threads', 'execute', 'read_file', 'write_file',
  'edit_file', 'ls', 'glob', 'grep', 'upload', 'download', 'start_process',
  'process_output', 'process_stdin', 'stop_process', 'create_session', 'end_session',
  'create_preview'];

async function connect(token) {
  const client = new Client({ name: 'yuxi-sdk-test', version: '1.0.0' });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  await client.connect(transport);
  return { client, transport };
}

let alice;
let bob;
let tid;

before(async () => {
  alice = await connect(process.env.YUXI_MCP_TOKEN);
  bob = await connect(process.env.YUXI_MCP_TOKEN_BOB);
});

after(async () => {
  await alice?.client.close();
  await bob?.client.close();
});

// one tool call that must succeed; its structured content
async function call(name, args, opts) {
  const r = await alice.client.callTool({ name, arguments: args }, undefined, opts);
  assert.equal(r.isError, false, `${name}: ${JSON.stringify(r.content)}`);
  return r;
}

test('the session: protocol, server, tools and instructions', async () => {
  assert.equal(alice.transport.protocolVersion, '2025-11-25');
  assert.match(alice.transport.sessionId, /^[0-9a-f]{32}$/);
  assert.equal(alice.client.getServerVersion().name, 'yuxi-sandbox');
  assert.deepEqual(alice.client.getServerCapabilities().tools, { listChanged: false });
  assert.match(alice.client.getInstructions(), /\/home\/yuxi\/user-data/);
  const { tools } = await alice.client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', t.name);
    assert.ok(t.description.length > 40, t.name);
  }
  await alice.client.ping();
});

test('a thread: run python, then write, edit, read, glob and grep a file', async () => {
  tid = (await call('create_thread', { metadata: { suite: 'sdk' } })).structuredContent.thread_id;
  assert.match(tid, /^t-[0-9a-f]{16}$/);

  const py = await call('execute', { thread_id: tid, command: "python3 -c 'print(6*7)'" });
  assert.equal(py.structuredContent.output, '42\n');
  assert.equal(py.structuredContent.exit_code, 0);
  assert.equal(py.content[0].text, '42\n[exit code 0]');

  const w = await call('write_file', { thread_id: tid, path: 'src/app.py',
    content: 'def answer():\n    return 41  # TODO\n' });
  assert.equal(w.structuredContent.path, '/home/yuxi/user-data/workspace/src/app.py');
  const e = await call('edit_file', { thread_id: tid, path: '/workspace/src/app.py',
    old_string: 'return 41  # TODO', new_string: 'return 42' });
  assert.equal(e.structuredContent.occurrences, 1);
  const r = await call('read_file', { thread_id: tid, path: 'src/app.py' });
  assert.equal(r.content[0].text, '     1\tdef answer():\n     2\t    return 42');
  const g = await call('glob', { thread_id: tid, pattern: '**/*.py' });
  assert.deepEqual(g.structuredContent.matches.map((m) => m.path),
    ['/home/yuxi/user-data/workspace/src/app.py']);
  const gr = await call('grep', { thread_id: tid, pattern: 'return 42' });
  assert.deepEqual(gr.structuredContent.matches, [{
    path: '/home/yuxi/user-data/workspace/src/app.py', line: 2, text: '    return 42' }]);
  const run = await call('execute', { thread_id: tid,
    command: "python3 -c 'import sys; sys.path.insert(0, \"src\"); import app; print(app.answer())'" });
  assert.equal(run.structuredContent.output, '42\n');
});

test('a background process: start, talk to it, stop it', async () => {
  const p = (await call('start_process', { thread_id: tid,
    command: "python3 -u -c 'import sys\nfor l in sys.stdin: print(l.strip().upper())'" })).structuredContent;
  assert.equal(p.state, 'running');
  await call('process_stdin', { thread_id: tid, process_id: p.process_id, data: 'hello\n' });
  let out = '';
  for (let i = 0; i < 20 && !out.includes('HELLO\n'); i++) {
    out += (await call('process_output', { thread_id: tid, process_id: p.process_id,
      offset: out.length, wait_ms: 1000 })).structuredContent.data;
  }
  assert.equal(out, 'HELLO\n');
  const s = await call('stop_process', { thread_id: tid, process_id: p.process_id });
  assert.equal(s.structuredContent.forgotten, true);
  assert.equal(s.structuredContent.state, 'exited');
  const gone = await alice.client.callTool({ name: 'process_output',
    arguments: { thread_id: tid, process_id: p.process_id } });
  assert.equal(gone.isError, true);
  assert.equal(gone.structuredContent.error.code, 'not_found');
});

test('a shell session keeps its directory and variables between commands', async () => {
  const sid = (await call('create_session', { thread_id: tid })).structuredContent.session_id;
  await call('execute', { thread_id: tid, session_id: sid, command: 'cd src && export N=42' });
  const r = await call('execute', { thread_id: tid, session_id: sid, command: 'pwd; echo $N' });
  assert.equal(r.structuredContent.output, '/home/yuxi/user-data/workspace/src\n42\n');
  const e = await call('end_session', { thread_id: tid, session_id: sid });
  assert.equal(e.structuredContent.forgotten, true);
});

test('execute streams its output as progress notifications', async () => {
  const seen = [];
  const r = await call('execute', { thread_id: tid,
    command: 'for i in 1 2 3; do echo step $i; sleep 0.3; done' },
  { onprogress: (p) => seen.push(p), resetTimeoutOnProgress: true });
  assert.deepEqual(seen.map((p) => p.message), ['step 1\n', 'step 2\n', 'step 3\n']);
  assert.deepEqual(seen.map((p) => p.progress), [7, 14, 21]);
  assert.equal(r.structuredContent.output, 'step 1\nstep 2\nstep 3\n');
});

test('bytes in and out, base64', async () => {
  const bytes = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 7) & 255));
  await call('upload', { thread_id: tid, path: '/outputs/blob.bin',
    content_base64: bytes.toString('base64') });
  const d = await call('download', { thread_id: tid, path: '/outputs/blob.bin' });
  assert.deepEqual(Buffer.from(d.structuredContent.content_base64, 'base64'), bytes);
});

test("another user's thread is a thread that does not exist", async () => {
  const strip = (r) => JSON.parse(JSON.stringify(r).replace(/ \[request id [^\]]*\]/g, '')
    .replace(/,"request_id":"[^"]*"/g, ''));
  for (const [name, args] of [['read_file', { path: 'src/app.py' }],
    ['execute', { command: 'cat src/app.py' }], ['ls', {}],
    ['write_file', { path: 'x', content: 'x' }]]) {
    const theirs = await bob.client.callTool({ name, arguments: { ...args, thread_id: tid } });
    const none = await bob.client.callTool({ name,
      arguments: { ...args, thread_id: 'no-such-thread' } });
    assert.equal(theirs.isError, true, name);
    assert.equal(theirs.structuredContent.error.code, 'not_found', name);
    assert.deepEqual(strip(theirs), strip(none), name);
  }
});

test('tool errors carry the API code; unknown tools are protocol errors', async () => {
  const r = await alice.client.callTool({ name: 'read_file',
    arguments: { thread_id: tid, path: '/etc/passwd' } });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error.code, 'path_not_allowed');
  assert.equal(r.structuredContent.status, 403);
  assert.match(r.content[0].text, /^path_not_allowed: .* \[request id [0-9a-f]{32}\]$/);
  await assert.rejects(alice.client.callTool({ name: 'rm_rf', arguments: {} }),
    /Unknown tool: rm_rf/);
});

test('no token: 401 before any JSON-RPC', async () => {
  await assert.rejects(connect(null), (e) => e.code === 401);
  await assert.rejects(connect('not-a-token'), (e) => e.code === 401);
});

test('ending a session: the server has none to end (405), which the SDK takes', async () => {
  const s = await connect(process.env.YUXI_MCP_TOKEN);
  await s.transport.terminateSession();
  await s.client.close();
});

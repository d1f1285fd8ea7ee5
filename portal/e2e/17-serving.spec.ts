// What the gateway serves: assets and the OpenAPI document.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import fs from 'node:fs';
import path from 'node:path';
import { test, $, REPO, base, expect, gw } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('assets: served precompressed with Content-Encoding and Vary; hashed assets immutable, index.html no-cache', async () => {
  const index = await fetch(gw.url + '/', { headers: { 'Accept-Encoding': 'gzip' } });
  const html = await index.text();
  expect(index.headers.get('cache-control') === 'no-cache', `index Cache-Control ${index.headers.get('cache-control')}`);
  const js = /\/assets\/index-[^"]+\.js/.exec(html)?.[0];
  expect(js, 'index.html names its script');
  // Node's fetch decodes gzip itself and drops nothing else: check the headers and the decoded bytes.
  const enc = await fetch(gw.url + js, { headers: { 'Accept-Encoding': 'gzip' } });
  const plain = await fetch(gw.url + js, { headers: { 'Accept-Encoding': 'identity' } });
  expect(enc.headers.get('content-encoding') === 'gzip', `Content-Encoding ${enc.headers.get('content-encoding')}`);
  expect(enc.headers.get('vary') === 'Accept-Encoding' && plain.headers.get('vary') === 'Accept-Encoding', 'Vary: Accept-Encoding');
  expect(plain.headers.get('content-encoding') === null, 'identity gets the plain file');
  expect(enc.headers.get('cache-control') === 'public, max-age=31536000, immutable', `asset Cache-Control ${enc.headers.get('cache-control')}`);
  expect((await enc.text()) === (await plain.text()), 'same script either way');
  expect(/javascript/.test(enc.headers.get('content-type')), `Content-Type ${enc.headers.get('content-type')}`);
});

test('OpenAPI: served without credentials, and a client generator reads it from the URL (npx openapi-typescript URL)', async () => {
  const url = gw.url + '/api/v1/agent-gateway/openapi.json';
  const r = await fetch(url); // no cookie, no token
  expect(r.status === 200, `GET openapi.json without credentials: ${r.status}`);
  const doc = await r.json();
  expect(doc.openapi || doc.swagger, 'an OpenAPI document');
  expect(doc.info?.title === 'Agent Workspace Files API' && /^\d+\.\d+\.\d+$/.test(doc.info?.version ?? ''), `a real title and version (${JSON.stringify(doc.info)})`);
  const schemes = doc.components?.securitySchemes ?? {};
  expect(schemes.bearer?.scheme === 'bearer' && schemes.basic?.scheme === 'basic' && schemes.session?.in === 'cookie', `bearer, basic and session cookie schemes (${JSON.stringify(schemes)})`);
  const ops = Object.entries(doc.paths).flatMap(([p, o]) => Object.entries(o).map(([m, op]) => ({ id: `${m} ${p}`, op })));
  for (const { id, op } of ops) {
    expect(op.security?.length === 3, `${id}: security on the operation`);
    expect(op.summary, `${id}: a summary`);
  }
  const put = doc.paths['/api/v1/agent-gateway/agents/{agent_id}/projects/files'].put;
  const body = put.requestBody.content['application/json'].schema;
  const bodySchema = body.$ref ? doc.components.schemas[body.$ref.split('/').pop()] : body;
  expect(['workspace', 'path', 'content', 'expected_revision'].every((f) => bodySchema.required?.includes(f)), `UpdateProjectFile body required fields (${bodySchema.required})`);
  const err = doc.components.schemas.rpcStatus;
  expect(err?.properties?.details?.items?.$ref === '#/components/schemas/ErrorInfo' && doc.components.schemas.ErrorInfo?.properties?.reason, 'typed error details carrying the reason');
  const post = await fetch(url, { method: 'POST' });
  expect(post.status === 401 || post.status === 405 || post.status === 404, `only reading is public (POST: ${post.status})`);
  const agents = await fetch(gw.url + '/api/v1/agent-gateway/agents');
  expect(agents.status === 401, `the API itself still needs credentials (${agents.status})`);
  const bin = path.join(REPO, 'contracts/node_modules/.bin/openapi-typescript');
  expect(fs.existsSync(bin), `${path.relative(REPO, bin)} missing: run npm ci in contracts/ (make setup)`);
  const out = path.join(base, 'client.d.ts');
  const { execFileSync } = await import('node:child_process');
  try {
    execFileSync(bin, [url, '-o', out], { stdio: 'pipe', timeout: 60_000 });
  } catch (err) {
    throw new Check(`openapi-typescript ${url} failed: ${String(err.stderr ?? err.message).slice(0, 400)}`);
  }
  const ts = fs.readFileSync(out, 'utf8');
  expect(ts.includes('"/api/v1/agent-gateway/agents"'), 'generated client has the agents path');
  expect(ts.includes('ErrorInfo') && /reason: string/.test(ts), 'generated client types the error reason');
});

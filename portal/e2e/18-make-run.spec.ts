// The local stack (`make run`) and the README's REST walk-through.
// Tests run in order (serial) and build on the state earlier ones (and
// earlier spec files) leave; the stack and page are fixtures.mjs's.
import fs from 'node:fs';
import path from 'node:path';
import { test, $, REPO, base, eventually, expect, gw, sa, sleep } from './fixtures.mjs';

test.describe.configure({ mode: 'serial' });

test('make run: refuses a taken port at once; every port and the state dir settable beside another stack; WEBDAV_WRITABLE=1; Ctrl-C says "stopped"', async () => {
  const { spawn, spawnSync } = await import('node:child_process');
  const net = await import('node:net');
  // The ports are chosen here and bound later by run.sh's processes. A port
  // the kernel handed out (listen on 0) is free again once closed, and any
  // process on the host listening on 0 or connecting out may get it before
  // run.sh binds it: run.sh then refuses it, rightly, as taken. So the ports
  // come from outside the kernel's ephemeral range, which it never assigns
  // by itself, and above run.sh's defaults (another make run); each is
  // checked free by binding it, and all are held until all are chosen.
  const [low, high] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  const ranges = [[20000, Math.min(low, 65536)], [Math.max(high + 1, 20000), 65536]].filter(([a, b]) => b - a >= 1000);
  expect(ranges.length, `room for ports outside the ephemeral range ${low}-${high}`);
  const bindPort = (port) =>
    new Promise((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(null));
      srv.listen(port, '127.0.0.1', () => resolve(srv));
    });
  const names = ['GATEWAY_PORT', 'CODEX_A_RPC_PORT', 'CODEX_A_DAV_PORT', 'CODEX_A_METRICS_PORT', 'CODEX_B_RPC_PORT', 'CODEX_B_DAV_PORT', 'CODEX_B_METRICS_PORT'];
  const ports = {};
  const held = [];
  for (let tries = 0; held.length < names.length; tries++) {
    expect(tries < 1000, `no free ports outside the ephemeral range ${low}-${high}`);
    const [a, b] = ranges[Math.floor(Math.random() * ranges.length)];
    const srv = await bindPort(a + Math.floor(Math.random() * (b - a)));
    if (srv) ports[names[held.push(srv) - 1]] = String(srv.address().port);
  }
  await Promise.all(held.map((srv) => new Promise((r) => srv.close(r))));
  const stateDir = path.join(base, 'run-sh-state');
  const env = { PATH: process.env.PATH, HOME: base, STATE_DIR: stateDir, ...ports };
  const script = path.join(REPO, 'deploy/local/run.sh');
  // A taken port: refused at once, naming the variable, nothing started or written.
  const taken = net.createServer();
  await new Promise((r) => taken.listen(Number(ports.CODEX_B_DAV_PORT), '127.0.0.1', r));
  try {
    const t0 = Date.now();
    const r = spawnSync(script, ['--check-ports'], { env, encoding: 'utf8', timeout: 10_000 });
    expect(r.status === 1 && r.stderr.includes(`127.0.0.1:${ports.CODEX_B_DAV_PORT}`) && r.stderr.includes('CODEX_B_DAV_PORT'), `--check-ports refuses (${r.status}: ${r.stderr})`);
    const full = spawnSync(script, [], { env, encoding: 'utf8', timeout: 10_000 });
    expect(full.status === 1 && full.stderr.includes('in use'), `run.sh refuses (${full.status}: ${full.stderr})`);
    expect(Date.now() - t0 < 5000, 'at once');
    expect(!fs.existsSync(stateDir), 'nothing written before the check');
  } finally {
    await new Promise((r) => taken.close(r));
  }
  // A whole second stack (the e2e stack is the first) on the chosen ports, writable WebDAV.
  const child = spawn(script, [], { env: { ...env, WEBDAV_WRITABLE: '1' }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  // 'exit' can come before the last output is read: how it ended is judged
  // on the output once both pipes closed (or 5 s after the exit).
  const drained = Promise.all([child.stdout, child.stderr].map((s) => new Promise((r) => s.once('close', r))));
  let ended = null;
  const exited = new Promise((r) => child.once('exit', (code, sig) => r((ended = { code, sig })))).then(async (e) => {
    await Promise.race([drained, sleep(5000)]);
    return e;
  });
  // Ctrl-C: the terminal sends SIGINT to the foreground process group. A
  // stack that already ended is no error here (ESRCH).
  const kill = (sig) => {
    try {
      process.kill(-child.pid, sig);
    } catch (e) {
      if (e.code !== 'ESRCH') throw e;
    }
  };
  const stop = async () => {
    kill('SIGINT');
    const end = await Promise.race([exited, sleep(20_000).then(() => null)]);
    if (!end) kill('SIGKILL');
    return end;
  };
  try {
    // A stack that ended is not waited for: how it ended, with its output, is the failure.
    await eventually(() => ended || out.includes('is running'), `stack started (${out.slice(-500)})`, 60_000);
    if (ended) await exited;
    expect(!ended, `stack started, not ended (${JSON.stringify(ended)}): ${out.slice(-1500)}`);
    const url = `http://127.0.0.1:${ports.GATEWAY_PORT}`;
    const token = /Admin token\s+(\S+)/.exec(out)?.[1];
    expect(token, 'token printed');
    expect(out.includes(`curl -H "Authorization: Bearer ${token}" ${url}/api/v1/agent-gateway/agents`), `quotes kept in the printed commands (${out})`);
    expect(out.includes('writable view') || out.includes('writable;'), 'says the WebDAV view is writable');
    // STATE_DIR outside the repo: the banner names its config, and the first start's line is not empty.
    expect(out.includes(`only its SHA-256 is in ${stateDir}/config/gateway.yaml`), `names STATE_DIR's gateway.yaml (${out.slice(0, 600)})`);
    expect(/\n  First start: sample project "sample"/.test(out) && !/is running[^\n]*\n {2}\n/.test(out), `a first-start line, no empty one (${out.slice(0, 400)})`);
    expect(out.includes(`export T=${token} G=${url}/api/v1/agent-gateway`), 'prints the export line the README REST walk-through starts from');
    const opt = await fetch(url + '/dav/codex-a/projects/', { method: 'OPTIONS', headers: { Authorization: `Bearer ${token}` } });
    expect((opt.headers.get('allow') ?? '').includes('DELETE'), `writable WebDAV view (Allow: ${opt.headers.get('allow')})`);
    // The default writable view keeps an unconditional overwrite as a version, by the operator.
    const readme = `${url}/dav/codex-a/projects/sample/README.md`;
    const put = await fetch(readme, { method: 'PUT', headers: { Authorization: `Bearer ${token}` }, body: 'overwritten without If-Match\n' });
    expect(put.status === 204 || put.status === 201, `unconditional PUT kept and accepted (${put.status} ${await put.text()})`);
    const cks = await (await fetch(`${url}/api/v1/agent-gateway/agents/codex-a/checkpoints?workspace.scope=PROJECT&workspace.project_name=sample&path=README.md`, { headers: { Authorization: `Bearer ${token}` } })).json();
    const v = (cks.checkpoints ?? []).find((c) => c.reason === 'CHECKPOINT_REASON_BEFORE_WEBDAV_WRITE');
    expect(v && v.operator === 'admin', `a version of README.md by admin (${JSON.stringify(cks)})`);
    const agents = await fetch(url + '/api/v1/agent-gateway/agents', { headers: { Authorization: `Bearer ${token}` } });
    expect(agents.status === 200, `REST answers on the chosen port (${agents.status})`);
  } catch (err) {
    // The first failure is the one reported; the stack is stopped either way.
    await stop();
    throw err;
  }
  const end = await stop();
  expect(end && end.code === 0, `exit status 0 after Ctrl-C (${JSON.stringify(end)}; output: ${out.slice(-1500)})`);
  expect(out.trimEnd().endsWith('run: stopped') && !out.includes('a process exited'), `ends with "stopped" (${out.slice(-300)})`);
  for (const p of [ports.GATEWAY_PORT, ports.CODEX_A_RPC_PORT]) {
    const r = spawnSync('bash', ['-c', `! (exec 3<>/dev/tcp/127.0.0.1/${p}) 2>/dev/null`]);
    expect(r.status === 0, `port ${p} free again after Ctrl-C`);
  }
});

test('REST: the README walk-through works pasted as written (create project, create file, read, update, stale update refused)', async () => {
  const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const rest = readme.slice(readme.indexOf('### REST'));
  const block = /```sh\n([\s\S]*?)```/.exec(rest)?.[1];
  expect(block && block.includes('expected_revision'), 'README has the REST block');
  const { spawnSync } = await import('node:child_process');
  // What `make run` prints for it: export T=<token> G=<url>/api/v1/agent-gateway
  const env = { PATH: process.env.PATH, HOME: base, T: gw.adminToken, G: `${gw.url}/api/v1/agent-gateway` };
  const r = spawnSync('bash', ['-c', block], { env, encoding: 'utf8', timeout: 60_000 });
  const out = r.stdout + r.stderr;
  expect(r.status === 0, `the block ran (${r.status}): ${out.slice(-600)}`);
  expect(sa.read('demo/notes.md') === 'hello\n', `the update with the read revision is on disk (${JSON.stringify(sa.exists('demo/notes.md') && sa.read('demo/notes.md'))})`);
  expect(/REVISION_MISMATCH/.test(out) && /HTTP 409\s*$/.test(out), `the stale update is refused with 409 REVISION_MISMATCH: ${out.slice(-400)}`);
  expect(!out.includes('"code":16') && !/\b401\b/.test(out.split('\n').slice(-2).join('\n')), 'authenticated throughout');
  // Leave no "demo" behind for later tests.
  await fetch(`${gw.url}/api/v1/agent-gateway/agents/codex-a/projects/demo?confirm_name=demo`, { method: 'DELETE', headers: { Authorization: `Bearer ${gw.adminToken}` } });
});

// Starts the real stack for the browser tests: two agent-sidecar processes
// and one agent-gateway, all on 127.0.0.1 with ports chosen by the kernel,
// configured with generated YAML in a temp dir. As root, sidecars run as
// UID/GID 1000 over volumes chowned to it (like in the pod).
import { spawn, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PORTAL = path.join(REPO, 'portal');
export const SIDECAR_UID = 1000;
const isRoot = process.getuid?.() === 0;

function newestMtime(dir) {
  let newest = 0;
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    const t = ent.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs;
    if (t > newest) newest = t;
  }
  return newest;
}

/**
 * Binaries to test: $AGENT_SIDECAR_BIN / $AGENT_GATEWAY_BIN, else bin/ from
 * `make build` when it is newer than the portal sources, else a fresh build
 * (portal into the gateway's embedded files, then go build) into tmp.
 */
export function binaries(tmp, log) {
  const env = { sidecar: process.env.AGENT_SIDECAR_BIN, gateway: process.env.AGENT_GATEWAY_BIN };
  if (env.sidecar && env.gateway) return env;
  const bin = { sidecar: path.join(REPO, 'bin/agent-sidecar'), gateway: path.join(REPO, 'bin/agent-gateway') };
  const portalSrc = Math.max(newestMtime(path.join(PORTAL, 'src')), fs.statSync(path.join(PORTAL, 'index.html')).mtimeMs);
  if (fs.existsSync(bin.sidecar) && fs.existsSync(bin.gateway) && fs.statSync(bin.gateway).mtimeMs >= portalSrc) {
    log(`using ${path.relative(REPO, bin.gateway)} and ${path.relative(REPO, bin.sidecar)} (make build)`);
    return bin;
  }
  log('bin/ missing or older than portal/src: building the portal and both binaries');
  execFileSync(path.join(REPO, 'deploy/scripts/build-portal.sh'), { cwd: REPO, stdio: 'inherit' });
  const out = path.join(tmp, 'bin');
  fs.mkdirSync(out, { mode: 0o755 });
  for (const [name, pkg] of [
    ['agent-sidecar', './sidecar/cmd/agent-sidecar'],
    ['agent-gateway', './gateway/cmd/agent-gateway'],
  ]) {
    execFileSync('go', ['build', '-o', path.join(out, name), pkg], { cwd: REPO, stdio: 'inherit' });
  }
  return { sidecar: path.join(out, 'agent-sidecar'), gateway: path.join(out, 'agent-gateway') };
}

function chownR(p) {
  if (!isRoot) return;
  fs.chownSync(p, SIDECAR_UID, SIDECAR_UID);
  if (fs.lstatSync(p).isDirectory()) for (const e of fs.readdirSync(p)) chownR(path.join(p, e));
}

// Every process started here is killed when the runner exits, also on Ctrl-C.
const children = new Set();
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

/** Starts cmd and resolves with {server: address} once every wanted "listening" line arrived. */
function startProcess(name, cmd, args, opts, want, logs) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'ignore', 'pipe'] });
    children.add(child);
    child.once('exit', () => children.delete(child));
    const addrs = {};
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name}: no "listening" lines after 30s (got ${JSON.stringify(addrs)})\n${logs.slice(-30).join('\n')}`));
    }, 30_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${name}: cannot start ${cmd}: ${err.message}`));
    });
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      if (want.some((w) => !addrs[w]))
        reject(new Error(`${name} exited during start-up (${code ?? sig})\n${logs.slice(-30).join('\n')}`));
    });
    readline.createInterface({ input: child.stderr }).on('line', (line) => {
      logs.push(line);
      if (logs.length > 2000) logs.splice(0, logs.length - 2000);
      try {
        const m = JSON.parse(line);
        if (m['@message'] === 'listening' && m.server && m.address) {
          addrs[m.server] = m.address;
          if (want.every((w) => addrs[w])) {
            clearTimeout(timer);
            resolve({ child, addrs });
          }
        }
      } catch {
        // not JSON: keep as log text
      }
    });
  });
}

/**
 * Makes the mutual-TLS files of the stack in base/pki with the gateway's own
 * generator (agent-gateway certs), as deploy/local/run.sh does: the sidecars
 * serve only mutual TLS and accept only the gateway's certificate. Each
 * sidecar's key is handed to the sidecar's user. Returns the directory.
 */
export function certs(base, gatewayBin, names) {
  const dir = path.join(base, 'pki');
  execFileSync(gatewayBin, ['certs', '--dir', dir, ...names.flatMap((n) => ['--agent', n])], { stdio: ['ignore', 'ignore', 'inherit'] });
  fs.chmodSync(dir, 0o755);
  for (const n of names) if (isRoot) fs.chownSync(path.join(dir, `sidecar-${n}.key`), SIDECAR_UID, SIDECAR_UID);
  return dir;
}

export class Sidecar {
  /** opts.checkpointBytes: services.checkpoints.maxTotalBytes (a tiny one makes a full store);
   * opts.checkpointsPerWorkspace: its maxPerWorkspace (above 20, a listing by path can leave older ones out). */
  constructor(name, base, bin, opts = {}) {
    this.name = name;
    this.checkpointBytes = opts.checkpointBytes;
    this.checkpointsPerWorkspace = opts.checkpointsPerWorkspace;
    this.bin = bin;
    this.dir = path.join(base, name);
    this.projects = path.join(this.dir, 'projects');
    this.codexHome = path.join(this.dir, 'codex-home');
    // The checkpoint store, outside the projects tree (where the agent cannot write).
    this.checkpoints = path.join(this.dir, 'checkpoints');
    this.configPath = path.join(this.dir, 'sidecar.yaml');
    this.pki = path.join(base, 'pki'); // made by certs()
    this.logs = [];
    this.child = null;
    this.ports = { rpc: '127.0.0.1:0', dav: '127.0.0.1:0', metrics: '127.0.0.1:0' };
    for (const d of [this.dir, this.projects, this.codexHome, this.checkpoints]) fs.mkdirSync(d, { mode: 0o755 });
    chownR(this.dir);
  }

  #writeConfig() {
    fs.writeFileSync(
      this.configPath,
      [
        `rpcServer: { address: "${this.ports.rpc}" }`,
        `davServer: { address: "${this.ports.dav}" }`,
        `metricsServer: { address: "${this.ports.metrics}" }`,
        'log: { level: debug, format: json }',
        'services:',
        '  project:',
        `    projectsRootDir: ${JSON.stringify(this.projects)}`,
        `    codexHomeDir: ${JSON.stringify(this.codexHome)}`,
        '    maxEditableFileSize: 1048576',
        '    maxUploadSize: 104857600',
        '    maxPageSize: 500',
        '    maxPathLength: 4096',
        '    maxPathDepth: 64',
        '    deniedDirectories: [.git, .hg, .svn, node_modules, .venv, venv, vendor, dist, build, .next, .cache, __pycache__]',
        '  checkpoints:',
        `    dir: ${JSON.stringify(this.checkpoints)}`,
        ...(this.checkpointBytes ? [`    maxTotalBytes: ${this.checkpointBytes}`] : []),
        ...(this.checkpointsPerWorkspace ? [`    maxPerWorkspace: ${this.checkpointsPerWorkspace}`] : []),
        'tls:',
        `  certFile: ${JSON.stringify(path.join(this.pki, `sidecar-${this.name}.crt`))}`,
        `  keyFile: ${JSON.stringify(path.join(this.pki, `sidecar-${this.name}.key`))}`,
        `  clientCAFile: ${JSON.stringify(path.join(this.pki, 'ca.crt'))}`,
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
  }

  /** Starts the sidecar; after the first start it keeps its ports, so the gateway's config stays right. */
  async start() {
    this.#writeConfig();
    const opts = { cwd: this.dir, env: { PATH: process.env.PATH, HOME: this.dir } };
    if (isRoot) Object.assign(opts, { uid: SIDECAR_UID, gid: SIDECAR_UID });
    const { child, addrs } = await startProcess(this.name, this.bin, ['--config', this.configPath], opts, ['rpc', 'dav', 'metrics'], this.logs);
    this.child = child;
    this.ports = { rpc: addrs.rpc, dav: addrs.dav, metrics: addrs.metrics };
    this.exited = new Promise((r) => child.once('exit', r));
  }

  async kill() {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  async stop() {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(t);
  }

  /** Writes a file on the sidecar's volume as the sidecar's user (what an agent would do). */
  write(rel, data, workspace = 'projects') {
    const root = workspace === 'global' ? this.codexHome : this.projects;
    const p = path.join(root, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o755 });
    fs.writeFileSync(p, data, { mode: 0o644 });
    chownR(root);
    return p;
  }

  read(rel, workspace = 'projects') {
    return fs.readFileSync(path.join(workspace === 'global' ? this.codexHome : this.projects, rel), 'utf8');
  }

  /** The file's bytes on the volume (for byte-exact comparisons). */
  readBytes(rel, workspace = 'projects') {
    return fs.readFileSync(path.join(workspace === 'global' ? this.codexHome : this.projects, rel));
  }

  exists(rel, workspace = 'projects') {
    return fs.existsSync(path.join(workspace === 'global' ? this.codexHome : this.projects, rel));
  }

  mkdir(rel) {
    fs.mkdirSync(path.join(this.projects, rel), { recursive: true, mode: 0o755 });
    chownR(this.projects);
  }
}

/** The ID of the i-th extra agent of a Gateway made with extraAgents. */
export const bulkAgent = (i) => `zz-bulk-${String(i).padStart(5, '0')}`;

export const tokenHash = (t) => createHash('sha256').update(t).digest('hex');

export class Gateway {
  /**
   * dir: its directory under base (a second gateway needs its own).
   * extraAgents: that many more static agents without a sidecar, zz-bulk-00000…
   * (after the usual ones in ID order, so the first page still has them).
   */
  constructor(base, bin, sidecars, { dir = 'gateway', extraAgents = 0 } = {}) {
    this.bin = bin;
    this.extraAgents = extraAgents;
    this.dir = path.join(base, dir);
    fs.mkdirSync(this.dir, { mode: 0o755 });
    this.configPath = path.join(this.dir, 'gateway.yaml');
    this.pki = path.join(base, 'pki'); // made by certs()
    this.adminToken = randomBytes(24).toString('hex');
    this.userToken = randomBytes(24).toString('hex');
    // Sessions are sealed with this key, so they survive a restart of the gateway.
    this.sessionKey = randomBytes(32).toString('base64');
    this.address = '127.0.0.1:0';
    this.logs = [];
    this.sidecars = sidecars;
    this.#writeConfig();
  }

  #writeConfig() {
    const sidecars = this.sidecars;
    const [a, b] = sidecars;
    const agent = (s) =>
      [
        `    ${s.name}:`,
        '      provider: codex_app_server',
        `      codexAppServer: { endpoint: "ws://${s.name}.invalid:4500" }`,
        '      sidecar:',
        `        endpoint: "${s.ports.rpc}"`,
        `        davEndpoint: "https://${s.ports.dav}"`,
        '        timeout: 5s',
      ].join('\n');
    fs.writeFileSync(
      this.configPath,
      [
        `httpServer: { address: "${this.address}" }`,
        'agentRuntime:',
        `  defaultAgent: ${a.name}`,
        '  sidecarTLS:',
        `    certFile: ${JSON.stringify(path.join(this.pki, 'gateway.crt'))}`,
        `    keyFile: ${JSON.stringify(path.join(this.pki, 'gateway.key'))}`,
        `    caFile: ${JSON.stringify(path.join(this.pki, 'ca.crt'))}`,
        '  agents:',
        agent(a),
        agent(b),
        '    codex-plain:',
        '      provider: codex_app_server',
        '      codexAppServer: { endpoint: "ws://codex-plain.invalid:4500" }',
        ...Array.from({ length: this.extraAgents }, (_, i) => {
          const id = bulkAgent(i);
          return `    ${id}: { provider: codex_app_server, codexAppServer: { endpoint: "ws://${id}.invalid:4500" } }`;
        }),
        'auth:',
        '  tokens:',
        `    - { operator: alice, role: admin, sha256: "${tokenHash(this.adminToken)}" }`,
        `    - { operator: bob, role: user, sha256: "${tokenHash(this.userToken)}" }`,
        `  session: { keys: ["${this.sessionKey}"] }`,
        '  trustedProxy:',
        '    cidrs: ["127.0.0.1/32"]',
        '    userHeader: X-Forwarded-User',
        '    groupsHeader: X-Forwarded-Groups',
        '    adminGroup: workspace-admins',
        'webdav: { writable: false }',
        `audit: { file: ${JSON.stringify(path.join(this.dir, 'audit.jsonl'))} }`,
        '',
      ].join('\n'),
    );
  }

  async start() {
    const { child, addrs } = await startProcess(
      'agent-gateway',
      this.bin,
      ['--config', this.configPath],
      { cwd: this.dir, env: { PATH: process.env.PATH, HOME: this.dir } },
      ['http'],
      this.logs,
    );
    this.child = child;
    this.address = addrs.http;
    this.url = `http://${addrs.http}`;
    this.exited = new Promise((r) => child.once('exit', r));
  }

  async stop() {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(t);
  }

  /**
   * Stops and starts the gateway on the same address (the browser keeps its
   * origin and cookie). newSessionKey: sessions sealed before no longer open
   * (what a key rotated away, or an expired session, looks like to the portal).
   */
  async restart({ newSessionKey = false } = {}) {
    await this.stop();
    if (newSessionKey) this.sessionKey = randomBytes(32).toString('base64');
    this.#writeConfig();
    for (let i = 0; ; i++) {
      try {
        await this.start();
        return;
      } catch (err) {
        if (i >= 20) throw err; // the port may take a moment to be free again
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }
}

/** A world-traversable temp dir (sidecars as UID 1000 must reach their volumes). */
export function tempBase() {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'portal-e2e-'));
  fs.chmodSync(base, 0o755);
  return base;
}

/**
 * The single sign-on chain's binaries (docs/sso.md): oauth2-proxy, the
 * pinned release deploy/scripts/k8s-tools.sh builds from the Go module proxy
 * (about 2 min cold, then cached outside the repo), and mock-oidc, mockoidc
 * as a command (internal/ssotest/cmd/mock-oidc). $OAUTH2_PROXY_BIN and
 * $MOCK_OIDC_BIN override them.
 */
export function ssoBinaries(tmp, log) {
  let proxy = process.env.OAUTH2_PROXY_BIN;
  if (!proxy) {
    log('oauth2-proxy: deploy/scripts/k8s-tools.sh oauth2-proxy (cached; a cold build takes minutes)');
    proxy = execFileSync(path.join(REPO, 'deploy/scripts/k8s-tools.sh'), ['oauth2-proxy'], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] })
      .toString()
      .trim();
  }
  let oidc = process.env.MOCK_OIDC_BIN;
  if (!oidc) {
    oidc = path.join(tmp, 'mock-oidc');
    execFileSync('go', ['build', '-o', oidc, './internal/ssotest/cmd/mock-oidc'], { cwd: REPO, stdio: 'inherit' });
  }
  return { proxy, oidc };
}

/** mockoidc (the mock-oidc command): users are queued for the next login. */
export class Oidc {
  constructor(bin) {
    this.bin = bin;
    this.logs = [];
    this.waiting = [];
  }

  async start() {
    this.child = spawn(this.bin, [], { stdio: ['pipe', 'ignore', 'pipe'] });
    children.add(this.child);
    this.child.once('exit', () => children.delete(this.child));
    const ready = new Promise((resolve, reject) => {
      this.child.once('exit', (code) => reject(new Error(`mock-oidc exited (${code})\n${this.logs.join('\n')}`)));
      readline.createInterface({ input: this.child.stderr }).on('line', (line) => {
        this.logs.push(line);
        let m;
        try {
          m = JSON.parse(line);
        } catch {
          return;
        }
        if (m['@message'] === 'listening') resolve(m);
        else this.waiting.shift()?.(m);
      });
    });
    const m = await ready;
    this.issuer = m.issuer;
  }

  #ask(obj) {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.child.stdin.write(JSON.stringify(obj) + '\n');
    });
  }

  /** Queues {name, email, groups} as the user of the next login. */
  async queue(user) {
    const m = await this.#ask(user);
    if (m['@message'] !== 'queued') throw new Error(`mock-oidc: ${JSON.stringify(m)}`);
  }

  /** oauth2-proxy's flags for a proxy at url in front of upstream (ssotest.ProxyArgs). */
  async proxyArgs(url, upstream) {
    return (await this.#ask({ proxyArgs: { url, upstream } })).args;
  }

  stop() {
    this.child?.stdin.end();
  }
}

/**
 * The built oauth2-proxy in front of upstream against oidc, on 127.0.0.1:0:
 * the listener is opened here and handed over as fd 3 (socket activation,
 * --http-address=fd:3), since the proxy prints no address it bound.
 */
export class OAuth2Proxy {
  constructor(bin) {
    this.bin = bin;
    this.logs = [];
  }

  async start(oidc, upstream) {
    const net = await import('node:net');
    const server = net.createServer();
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${server.address().port}`;
    const args = await oidc.proxyArgs(this.url, upstream);
    this.child = spawn('/bin/sh', ['-c', 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"', this.bin, ...args], {
      stdio: ['ignore', 'pipe', 'pipe', server._handle.fd],
    });
    children.add(this.child);
    this.child.once('exit', () => children.delete(this.child));
    for (const s of [this.child.stdout, this.child.stderr]) readline.createInterface({ input: s }).on('line', (l) => this.logs.push(l));
    server.close();
    for (let i = 0; ; i++) {
      if (this.child.exitCode !== null) throw new Error(`oauth2-proxy exited during start-up\n${this.logs.join('\n')}`);
      try {
        if ((await fetch(this.url + '/ping')).ok) return;
      } catch {
        // not yet listening
      }
      if (i > 300) throw new Error(`oauth2-proxy: no /ping answer\n${this.logs.join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  stop() {
    this.child?.kill('SIGTERM');
  }
}

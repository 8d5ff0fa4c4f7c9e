// A `gpuscope serve` on the simulator for the browser tests: a port of its own (port 0, read back from
// the agent's "listening" log line), a history directory of its own, no events socket, and stopped by
// its pid however the test ends.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const kStartTimeoutMs = 20000;
const kStopGraceMs = 5000;

const running = new Set();
process.on('exit', () => {
  for (const child of running) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

export function sourceDir() {
  if (process.env.GPUSCOPE_SOURCE_DIR) return process.env.GPUSCOPE_SOURCE_DIR;
  return path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
}

export function exe() {
  const e = process.env.GPUSCOPE_EXE || process.argv.find((a) => a.endsWith('/gpuscope'));
  if (!e) throw new Error('set GPUSCOPE_EXE to the gpuscope binary');
  return e;
}

export function tempDir(prefix = 'gpuscope-web-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export class Agent {
  // scenario: a path; args: extra `serve` flags; port: 0 for any free one.
  constructor({ scenario, args = [], port = 0, dataDir = null }) {
    this.scenario = scenario;
    this.args = args;
    this.requestedPort = port;
    this.ownDataDir = !dataDir;
    this.dataDir = dataDir || tempDir();
    this.child = null;
    this.port = 0;
    this.log = '';
  }

  async start() {
    const argv = [`--simulate=${this.scenario}`, 'serve', '--listen', `127.0.0.1:${this.requestedPort}`,
                  '--data-dir', this.dataDir, '--events-socket', 'none', ...this.args];
    // The simulator's real clock (a frozen one stamps every reading alike, and the history keeps one),
    // its default seed, and UTC.
    const env = { ...process.env, GPUSCOPE_SIM_SEED: '', TZ: 'UTC' };
    delete env.GPUSCOPE_SIM_TIME;
    this.log = '';
    this.child = spawn(exe(), argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(this.child);
    const child = this.child;
    child.on('exit', () => running.delete(child));
    const port = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`agent did not listen in ${kStartTimeoutMs} ms:\n${this.log}`)), kStartTimeoutMs);
      const onData = (chunk) => {
        this.log += chunk.toString();
        const m = this.log.match(/msg=listening address=\S*:(\d+)/);
        if (m) { clearTimeout(timer); resolve(Number(m[1])); }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`agent exited (${code}):\n${this.log}`)); });
    });
    this.port = port;
    this.requestedPort = port; // a restart takes the same port
    return this;
  }

  url(p = '') { return `http://127.0.0.1:${this.port}/${p}`; }

  async json(p) {
    const r = await fetch(this.url(p));
    return r.json();
  }

  // SIGTERM by pid, SIGKILL if it has not exited within the grace.
  async stop() {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), kStopGraceMs);
    await exited;
    clearTimeout(timer);
  }

  async dispose() {
    await this.stop();
    if (this.ownDataDir) fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/**
 * Finding and running ffmpeg, the only audio tool stemsplit uses.
 *
 * Preference order: an explicit `STEMSPLIT_FFMPEG`, then a system `ffmpeg` on PATH
 * (usually newer and distro-patched), then the static binary shipped inside
 * `@ffmpeg-installer/ffmpeg` so a plain `npm install` works offline.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { StemsplitError } from '../errors.js';

export function resolveFfmpegPath(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env['STEMSPLIT_FFMPEG'];
  if (explicit !== undefined && explicit !== '') return explicit;
  return findOnPath('ffmpeg', env) ?? bundledFfmpegPath(env);
}

function findOnPath(command: string, env: NodeJS.ProcessEnv): string | undefined {
  const dirs = (env['PATH'] ?? '').split(path.delimiter).filter((dir) => dir !== '');
  const names = process.platform === 'win32' ? [`${command}.exe`, command] : [command];
  for (const dir of dirs) {
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function bundledFfmpegPath(env: NodeJS.ProcessEnv): string {
  // The standalone executable carries its own ffmpeg and names it here (src/sea/runtime.ts).
  const unpacked = env['STEMSPLIT_BUNDLED_FFMPEG'];
  if (unpacked !== undefined && unpacked !== '') return unpacked;
  const require = createRequire(import.meta.url);
  const installer = require('@ffmpeg-installer/ffmpeg') as { path: string };
  return installer.path;
}

/** Keeps the last few stderr lines of a process: enough for an error message, bounded in memory. */
export class StderrTail {
  private readonly lines: string[] = [];
  private partial = '';

  constructor(
    private readonly keep = 20,
    private readonly onLine?: (line: string) => void,
  ) {}

  push(chunk: Buffer | string): void {
    const parts = (this.partial + chunk.toString()).split(/\r?\n|\r/);
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.addLine(line);
  }

  end(): void {
    if (this.partial !== '') this.addLine(this.partial);
    this.partial = '';
  }

  /** The last non-empty line, which is where ffmpeg puts the reason it failed. */
  lastLine(): string {
    return this.lines.at(-1) ?? '';
  }

  text(): string {
    return this.lines.join('\n');
  }

  private addLine(line: string): void {
    const trimmed = line.trim();
    if (trimmed === '') return;
    this.onLine?.(trimmed);
    this.lines.push(trimmed);
    if (this.lines.length > this.keep) this.lines.shift();
  }
}

export interface FfmpegRun {
  readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  readonly stderr: StderrTail;
  /** Resolves with the exit code (null when killed by a signal) once the process and its pipes are done. */
  readonly exited: Promise<number | null>;
}

/** Spawns ffmpeg with all three pipes; `-nostdin` is not added, callers that feed stdin need it open. */
export function spawnFfmpeg(ffmpegPath: string, args: readonly string[], onStderrLine?: (line: string) => void): FfmpegRun {
  const child = spawn(ffmpegPath, ['-hide_banner', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr = new StderrTail(20, onStderrLine);
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', (error) => {
      reject(new StemsplitError('INTERNAL_ERROR', `cannot run ffmpeg (${ffmpegPath}): ${error.message}`, { cause: error }));
    });
    child.once('close', (code) => {
      stderr.end();
      resolve(code);
    });
  });
  // A process that dies early closes stdin under us; the exit code reports the failure.
  child.stdin.on('error', () => undefined);
  return { child, stderr, exited };
}

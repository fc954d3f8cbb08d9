/**
 * A progress bar on stderr: redrawn in place on a terminal, a line every 10 % otherwise. It says
 * how long the work has taken and, once there is something to go on, about how long is left: a
 * Demucs split of a whole song takes minutes.
 */
export interface ProgressBar {
  update(percent: number, label: string): void;
  done(message?: string): void;
}

/** Below this, the rate of progress says little about the rest (decoding is quick, models load). */
const ESTIMATE_FROM_PERCENT = 8;
const SHOWN_FROM_MS = 5_000;

export function createProgressBar(stream: NodeJS.WriteStream = process.stderr, title = '', now: () => number = Date.now): ProgressBar {
  const width = 30;
  const started = now();
  let lastDecile = -1;
  let lastDrawn = '';
  const timing = (percent: number): string => {
    const elapsed = now() - started;
    const left = percent >= ESTIMATE_FROM_PERCENT ? (elapsed * (100 - percent)) / percent : 0;
    // A few seconds is below what the estimate can tell (the phases' weights are averages).
    return `  ${clock(elapsed)}${left >= SHOWN_FROM_MS ? `, about ${clock(left)} left` : ''}`;
  };
  return {
    update(percent: number, label: string) {
      const clamped = Math.max(0, Math.min(100, percent));
      if (stream.isTTY) {
        const filled = Math.round((clamped / 100) * width);
        const line = `${title}[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${clamped.toFixed(0).padStart(3)}% ${label}${timing(clamped)}`;
        if (line !== lastDrawn) stream.write(`\r${line}\x1b[K`);
        lastDrawn = line;
      } else {
        const decile = Math.floor(clamped / 10);
        if (decile !== lastDecile) stream.write(`${title}${(decile * 10).toString().padStart(3)}% ${label}${timing(clamped)}\n`);
        lastDecile = decile;
      }
    },
    done(message?: string) {
      if (stream.isTTY && lastDrawn) stream.write('\r\x1b[K');
      if (message) stream.write(`${message}\n`);
    },
  };
}

/**
 * A line saying what is under way before there is anything to report, on a terminal only: it is
 * drawn in place and cleared, so a refusal that follows stays the one line on stderr (scripts and
 * logs read only what happened: a loaded model, its progress, or the refusal).
 */
export interface StatusLine {
  show(text: string): void;
  clear(): void;
}

export function createStatusLine(stream: NodeJS.WriteStream = process.stderr): StatusLine {
  let shown = false;
  return {
    show(text: string) {
      if (!stream.isTTY) return;
      stream.write(`\r${text}\x1b[K`);
      shown = true;
    },
    clear() {
      if (shown) stream.write('\r\x1b[K');
      shown = false;
    },
  };
}

/** 75_000 → `1:15`; 3_723_000 → `1:02:03`. */
function clock(ms: number): string {
  const total = Math.round(ms / 1000);
  const [h, m, s] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  const mmss = `${h > 0 ? String(m).padStart(2, '0') : m}:${String(s).padStart(2, '0')}`;
  return h > 0 ? `${h}:${mmss}` : mmss;
}

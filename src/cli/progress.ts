/** A progress bar on stderr: redrawn in place on a terminal, a line every 10 % otherwise. */
export interface ProgressBar {
  update(percent: number, label: string): void;
  done(message?: string): void;
}

export function createProgressBar(stream: NodeJS.WriteStream = process.stderr, title = ''): ProgressBar {
  const width = 30;
  let lastDecile = -1;
  let lastDrawn = '';
  return {
    update(percent: number, label: string) {
      const clamped = Math.max(0, Math.min(100, percent));
      if (stream.isTTY) {
        const filled = Math.round((clamped / 100) * width);
        const line = `${title}[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${clamped.toFixed(0).padStart(3)}% ${label}`;
        if (line !== lastDrawn) stream.write(`\r${line}\x1b[K`);
        lastDrawn = line;
      } else {
        const decile = Math.floor(clamped / 10);
        if (decile !== lastDecile) stream.write(`${title}${(decile * 10).toString().padStart(3)}% ${label}\n`);
        lastDecile = decile;
      }
    },
    done(message?: string) {
      if (stream.isTTY && lastDrawn) stream.write('\r\x1b[K');
      if (message) stream.write(`${message}\n`);
    },
  };
}

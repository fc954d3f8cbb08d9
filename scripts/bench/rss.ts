/** Peak resident memory of this process, sampled from /proc every 5 ms by a worker thread (ONNX Runtime blocks the thread it runs on). */
import { Worker } from 'node:worker_threads';

export interface RssSampler {
  reset(): void;
  peakBytes(): number;
  stop(): Promise<number>;
}

export function rssSampler(): RssSampler {
  const shared = new Float64Array(new SharedArrayBuffer(8));
  const worker = new Worker(
    `const { workerData } = require('node:worker_threads');
     const fs = require('node:fs');
     const page = 4096;
     setInterval(() => {
       const rss = Number(fs.readFileSync('/proc/self/statm', 'utf8').split(' ')[1]) * page;
       if (rss > workerData[0]) workerData[0] = rss;
     }, 5);`,
    { eval: true, workerData: shared },
  );
  return {
    reset: () => void (shared[0] = 0),
    peakBytes: () => shared[0] as number,
    stop: async () => {
      await worker.terminate();
      return shared[0] as number;
    },
  };
}

/** What `serve` and `worker` say of the jobs they run, per device. */

/** "jobs: 1 at a time on GPU: … (Vulkan) and 1 at a time on CPU" (--gpu-workers, --workers), or what an API-only node runs. */
export function jobSlots(devices: readonly string[], config: { readonly concurrency: number; readonly gpuWorkers: number }): string {
  if (devices.length === 0) return 'no jobs run here (--workers 0)';
  const slots = devices.map((device) => `${device.startsWith('GPU') ? config.gpuWorkers : config.concurrency} at a time on ${device}`);
  return `jobs: ${slots.join(' and ')}`;
}

import { redactDatabaseUrl } from '../../store/index.js';
import { startWorker } from '../../worker.js';
import { runUntilSignalled, type CommandContext } from '../context.js';
import { jobSlots } from '../job-slots.js';

export async function workerCommand(ctx: CommandContext): Promise<void> {
  const worker = await startWorker(ctx.config);
  const database = redactDatabaseUrl(ctx.config.databaseUrl ?? '');
  ctx.stderr.write(`stemsplit worker ${worker.name}: ${jobSlots(worker.jobs.devices, ctx.config)} from ${database}, files in ${ctx.config.dataDir}\n`);
  await runUntilSignalled(ctx, () => worker.close(), {
    graceful: 'running jobs finish, queued jobs stay for other workers',
    immediate: 'running jobs go to another worker once their lease lapses',
  });
}

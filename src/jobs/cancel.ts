/**
 * A failed job's refund and webhook, whoever ends it: the runner when its split fails, the API when
 * the job's owner cancels it (POST /v1/audio/splits/{id}/cancel, an addition to the v1 spec).
 *
 * A cancel ends the job at once, in one transaction: the status becomes `failed` with the job
 * error CANCELLED (the spec's statuses are closed: queued, processing, succeeded, failed), every
 * credit it was charged is refunded (it delivers no stems, so none was used), and its webhook is
 * queued. The runner holding the job sees it has ended (JobRunner: at once in this process, within
 * its cancel poll in another) and tells the worker to stop at its next chunk; the runner then
 * removes whatever the job had written.
 */
import { rm } from 'node:fs/promises';
import { StemsplitError } from '../errors.js';
import type { DataStore, Split } from '../store/index.js';
import { SPLIT_EVENT } from './webhooks.js';

/** The public resource of a job, as its webhook carries it (the API layer knows its shape and URLs). */
export type PresentSplit = (split: Split, nowMs: number) => unknown;

export const CANCELLED_MESSAGE = 'cancelled by its owner; no stems were kept and every credit was refunded';

/** Refunds a job that just failed (inside the caller's transaction) and queues its webhook; returns the job as stored. */
export async function refundAndAnnounce(data: DataStore, split: Split, present: PresentSplit): Promise<Split> {
  await data.accounts.addLedgerEntry(split.accountId, 'refund', split.creditsUsed, split.id, `refund of failed ${split.id}`);
  const failed = (await data.splits.get(split.id)) as Split;
  await queueWebhook(data, failed, present);
  return failed;
}

export async function queueWebhook(data: DataStore, split: Split, present: PresentSplit): Promise<void> {
  if (!split.webhookUrl) return;
  await data.deliveries.enqueue(split.id, split.accountId, split.webhookUrl, JSON.stringify({ event: SPLIT_EVENT, data: present(split, data.clock.now()) }));
}

/**
 * Cancels a queued or processing job: failed with CANCELLED, refunded, its webhook queued. A job
 * already cancelled is returned as it is (a repeated cancel is harmless); one that ended otherwise
 * is refused, saying how it ended.
 */
export async function cancelSplit(data: DataStore, split: Split, present: PresentSplit): Promise<Split> {
  const cancelled = await data.store.transaction(async () => {
    if (!(await data.splits.markCancelled(split.id, CANCELLED_MESSAGE))) return undefined;
    return refundAndAnnounce(data, split, present);
  });
  if (cancelled) return cancelled;
  const now = (await data.splits.get(split.id)) as Split;
  if (now.status === 'failed' && now.errorCode === 'CANCELLED') return now;
  throw new StemsplitError(
    'VALIDATION_ERROR',
    `split ${split.id} already ${now.status === 'succeeded' ? 'succeeded' : `failed (${now.errorCode ?? 'unknown'})`}; only a queued or processing split can be cancelled`,
  );
}

/**
 * Deletes a job (DELETE /v1/audio/splits/{id}, an addition): a queued or processing one is first
 * cancelled as above (its runner then removes what it wrote); its source and stems leave the disk;
 * it is marked deleted, so its signed URLs answer 404 and the API shows it no more. Its row stays
 * for the ledger entries that name it.
 */
export async function deleteSplit(data: DataStore, split: Split, present: PresentSplit): Promise<{ cancelled: boolean }> {
  const unfinished = split.status === 'queued' || split.status === 'processing';
  if (unfinished) await cancelSplit(data, split, present);
  await data.splits.markDeleted(split.id);
  const { layout } = data;
  await rm(layout.absolute(layout.stemDir(split.id)), { recursive: true, force: true });
  await rm(layout.absolute(split.sourcePath), { force: true });
  return { cancelled: unfinished };
}

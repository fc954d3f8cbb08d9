// @ts-check
/**
 * Browser module `/web/split-words.js`: a split (a job of `/v1/audio/splits`) in words: its status,
 * what it makes, which models ran and under which terms, its place in the queue. `library` (the
 * LibraryView) knows the server's models: their tasks, origins and terms.
 * @typedef {import('./library-view.js').LibraryView} LibraryView
 */
import { TASK_NAMES } from './model-words.js';

export const STATUS_WORDS = { queued: 'Queued', processing: 'Splitting', succeeded: 'Ready', failed: 'Failed' };

/** `avg_wave`, `avg_fft, weights 2, 1`: how an ensemble's stems were combined. */
function ensembleWords(split) {
  return split.ensemble + (split.ensembleWeights ? ', weights ' + split.ensembleWeights.join(', ') : '');
}

/** `voc, then vocals with karaoke`: a chain's steps in words. */
function chainWords(chain) {
  return chain
    .map(function (step, index) {
      const model = step.models ? step.models.join(' + ') : step.model;
      return index === 0 ? model : 'then ' + step.input + ' with ' + model;
    })
    .join(', ');
}

/** "Made with <model>" (or the members of an ensemble and how they were combined), the terms of their weights, and for the bundled model what a pull gives. */
export function modelLines(split, /** @type {LibraryView} */ library) {
  const members = split.models;
  // What ran it, once its model has loaded: "CPU" or "GPU: <adapter> (<API>)".
  const device = split.device ? (split.status === 'succeeded' ? ' Ran on ' : ' Runs on ') + split.device + '.' : '';
  if (split.chain) return ['Made with a chain: ' + chainWords(split.chain) + '. Terms: ' + library.termsWords(members) + '.' + device];
  if (members.length > 1) {
    return [
      'Made with an ensemble of ' +
        members.join(', ') +
        ' (their stems combined with ' +
        ensembleWords(split) +
        '). Terms: ' +
        library.termsWords(members) +
        '.' +
        device,
    ];
  }
  const model = library.model(split.model);
  const lines = ['Made with ' + split.model + (model ? '. Terms: ' + model.terms : '') + '.' + device];
  if (model && model.origin === 'bundled') {
    lines.push(
      'This is the small model bundled with stemsplit, weak on vocals: for Demucs v4 quality run "stemsplit models pull htdemucs" on the server (its weights are for research use only).',
    );
  }
  return lines;
}

/** A queued job's place, in words: the server counts every account's jobs ahead of it. */
export function queueWords(position) {
  if (!position) return 'Waiting for its turn\u2026';
  return position === 1 ? 'Next in the queue\u2026' : 'Waiting for its turn: number ' + position + ' in the queue\u2026';
}

/** What a split makes: `Vocals + instrumental`, `Drums + the rest`, its model's task (`4 stems`, `De-reverb`), or `Ensemble`. */
export function kindWords(split, /** @type {LibraryView} */ library) {
  if (split.twoStems) return capitalized(split.twoStems) + ' + ' + (split.twoStems === 'vocals' ? 'instrumental' : 'the rest');
  const members = split.models;
  if (split.chain) return 'Chain of ' + split.chain.length;
  if (members.length > 1) return 'Ensemble';
  const model = library.model(members[0]);
  return model ? TASK_NAMES[model.task] || model.task : split.stemModel === '6s' ? '6 stems' : '4 stems';
}

/** Which models ran: `htdemucs`, or `a + b (avg_wave)` for an ensemble. */
export function ranWords(split) {
  const members = split.models;
  if (split.chain) return chainWords(split.chain);
  return members.length > 1 ? members.join(' + ') + ' (' + ensembleWords(split) + ')' : members[0];
}

function capitalized(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Whether the split ended because it was cancelled (on this page, by the API or the CLI). */
export function isCancelled(split) {
  return split.status === 'failed' && Boolean(split.error) && split.error.code === 'CANCELLED';
}

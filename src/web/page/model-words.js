// @ts-check
/**
 * Browser module `/web/model-words.js`: the server's models and the next split's choice in words:
 * task names, times (measured per minute of audio, estimated for the chosen songs), terms,
 * published scores, file formats, and the choice's one-sentence summary. `byName` is the
 * library's models by name; `songSeconds` the length of the chosen songs (undefined: none, or unknown).
 * @typedef {import('./library-view.js').ModelInfo} ModelInfo
 * @typedef {import('./library-view.js').Choice} Choice
 * @typedef {Map<string, ModelInfo>} ModelsByName
 */
import { formatTime } from './dom.js';

/** The tasks in the order a UVR user looks for them, as the page names them. */
export const TASK_NAMES = {
  'four-stems': '4 stems',
  'six-stems': '6 stems',
  vocals: 'Vocals',
  instrumental: 'Instrumental',
  karaoke: 'Karaoke (lead vocals apart)',
  dereverb: 'De-reverb',
  deecho: 'De-echo',
  denoise: 'Denoise',
  'drum-parts': 'Drum parts',
  other: 'Other',
};

/** `12 s`, `1 min 5 s`: a processing time in words. */
export function spanWords(seconds) {
  const whole = Math.max(1, Math.ceil(seconds));
  if (whole < 60) return whole + ' s';
  const minutes = Math.floor(whole / 60);
  return minutes + ' min' + (whole % 60 ? ' ' + (whole % 60) + ' s' : '');
}

/** `7.3 s`, `64 s`: a measured rate of processing seconds (per minute of audio). */
export function rateWords(seconds) {
  return (seconds < 10 ? seconds.toFixed(1) : String(Math.round(seconds))) + ' s';
}

/** How long `seconds` of audio takes with these models run one after another; undefined when one is not measured yet. */
export function estimateSeconds(models, seconds) {
  if (
    models.some(function (model) {
      return !model || model.secondsPerMinute === null;
    })
  )
    return undefined;
  return models.reduce(function (sum, model) {
    return sum + (model.secondsPerMinute * seconds) / 60;
  }, 0);
}

/** `MP3`, `FLAC 24-bit`, `WAV 32-bit float`: a job's files in words. */
export function formatWords(format, bitDepth) {
  const name = String(format || 'mp3').toUpperCase();
  if (!bitDepth) return name;
  return name + ' ' + bitDepth + '-bit' + (bitDepth === 32 ? ' float' : '');
}

/** `vocals 11.77 dB, instrumental 16.45 dB` */
export function sdrWords(/** @type {Record<string, number>} */ sdr) {
  return Object.entries(sdr)
    .map(function ([stem, value]) {
      return stem + ' ' + value.toFixed(2) + ' dB';
    })
    .join(', ');
}

/** One model's time for the chosen songs, or per minute of audio before a song is chosen. */
export function timeWords(/** @type {ModelInfo} */ model, /** @type {number | undefined} */ songSeconds) {
  if (model.secondsPerMinute === null) return 'Time: not measured yet on this server (the first job with it measures it).';
  const rate = rateWords(model.secondsPerMinute) + ' per minute of audio';
  if (songSeconds === undefined) return 'Time: ' + rate + ' on this server.';
  return 'Time: about ' + spanWords(estimateSeconds([model], songSeconds)) + ' for the chosen audio (' + rate + ' on this server).';
}

/** The choice in one sentence: what runs, under which terms, for how long, into which files. */
export function choiceWords(/** @type {Choice} */ choice, /** @type {ModelsByName} */ byName, /** @type {number | undefined} */ songSeconds) {
  if (choice.problem) return choice.problem;
  if (choice.members.length === 0) return 'Writes ' + formatWords(choice.body.outputFormat, choice.body.bitDepth) + ' files.';
  const terms = termsWords(choice.members, byName);
  const weights = choice.body.ensembleWeights ? ' (weights ' + /** @type {number[]} */ (choice.body.ensembleWeights).join(', ') + ')' : '';
  if (choice.body.chain) return chainWords(choice, terms, byName, songSeconds);
  const runs =
    choice.members.length > 1
      ? 'Runs ' + choice.members.join(' + ') + ' one after another, combined with ' + choice.body.ensemble + weights
      : 'Runs ' + choice.members[0];
  return runs + ', writing ' + filesWords(choice, terms, byName, songSeconds);
}

/** A chain in one sentence: each step, the cost (each step splits the whole song), terms and time. */
function chainWords(
  /** @type {Choice} */ choice,
  /** @type {string} */ terms,
  /** @type {ModelsByName} */ byName,
  /** @type {number | undefined} */ songSeconds,
) {
  const steps = /** @type {Array<Record<string, any>>} */ (choice.body.chain);
  const words = steps.map(function (step, index) {
    const model = step.models ? step.models.join(' + ') + ' (' + step.ensemble + ')' : step.model;
    return index === 0 ? 'step 1 splits the song with ' + model : 'step ' + (index + 1) + ' splits ' + step.input + ' with ' + model;
  });
  return (
    'Runs a chain of ' +
    steps.length +
    ' steps: ' +
    words.join('; ') +
    '. It costs ' +
    steps.length +
    ' credits per second of audio (each step splits the whole length), writing ' +
    filesWords(choice, terms, byName, songSeconds)
  );
}

/** The end of a choice's sentence: `FLAC 24-bit files. Terms: …. 3:20 of audio: about 40 s on this server.` */
function filesWords(
  /** @type {Choice} */ choice,
  /** @type {string} */ terms,
  /** @type {ModelsByName} */ byName,
  /** @type {number | undefined} */ songSeconds,
) {
  return (
    formatWords(choice.body.outputFormat, choice.body.bitDepth) + ' files. Terms: ' + terms + '. ' + estimateWords(choice.members, byName, songSeconds) + '.'
  );
}

/** `a and b: MIT; c: not stated`: the terms of each model, those under the same terms named together. */
export function termsWords(/** @type {string[]} */ names, /** @type {ModelsByName} */ byName) {
  /** @type {Map<string, string[]>} */
  const byTerms = new Map();
  for (const name of names) {
    const model = byName.get(name);
    const terms = model ? model.terms : 'not listed by this server';
    byTerms.set(terms, (byTerms.get(terms) || []).concat([name]));
  }
  return Array.from(byTerms, function (entry) {
    return entry[1].join(' and ') + ': ' + entry[0];
  }).join('; ');
}

/** How long the chosen songs will take with these models (names), in words. */
export function estimateWords(/** @type {string[]} */ names, /** @type {ModelsByName} */ byName, /** @type {number | undefined} */ songSeconds) {
  if (songSeconds === undefined) return 'Choose a song to see how long it will take';
  const models = names.map((name) => byName.get(name));
  const seconds = estimateSeconds(models, songSeconds);
  const audio = formatTime(songSeconds) + ' of audio';
  if (seconds === undefined) {
    const unmeasured = names.filter(function (name, i) {
      return !models[i] || models[i].secondsPerMinute === null;
    });
    return (
      audio +
      ': time not measured yet for ' +
      unmeasured.join(', ') +
      ' on this server (the first job with ' +
      (unmeasured.length > 1 ? 'each' : 'it') +
      ' measures it)'
    );
  }
  return audio + ': about ' + spanWords(seconds) + ' on this server';
}

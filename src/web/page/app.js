// @ts-check
/**
 * Browser module `/web/app.js`: the page's controller. The key (from the `#key=` link or pasted),
 * the upload → reservation → split → progress flow, the key's past jobs, and the keyboard.
 */
import {
  acceptedKinds,
  ApiError,
  contentTypeOf,
  createApi,
  explainError,
  explainJobFailure,
  fileProblem,
  loadLimits,
  notEnoughCredits,
  retentionWords,
  serverLimits,
  songSeconds,
  uploadLimitWords,
} from './api.js';
import { formatTime, h, show } from './dom.js';
import { formatWords, LibraryView, spanWords, TASK_NAMES } from './library-view.js';
import { MixerView } from './mixer-view.js';
import { PeopleView } from './people-view.js';

const KEY_STORAGE = 'stemsplit.apiKey';
const POLL_MS = 1000;
const RETRY_MS = 3000;
const HISTORY_REFRESH_MS = 2000;
const STATUS_WORDS = { queued: 'Queued', processing: 'Splitting', succeeded: 'Ready', failed: 'Failed' };
/** The page's element with this id; the markup (index.html) guarantees each one exists. */
const $ = function (/** @type {string} */ id) {
  return document.getElementById(id);
};
/** An input of the page by id. */
const input$ = function (/** @type {string} */ id) {
  return /** @type {HTMLInputElement} */ ($(id));
};

const state = {
  key: '',
  following: 0,
  busy: false,
  cursor: null,
  historyTimer: undefined,
  /** @type {number | undefined} the account's balance in seconds, as last read */
  balance: undefined,
  /** What the last batch could not start, naming each file: shown while its other songs split. */
  batchProblems: '',
  /** @type {{file: File, seconds: number | undefined}[]} the chosen songs, waiting for "Split" */
  pending: [],
};
const api = createApi(function () {
  return state.key;
});
const statusLine = $('status');

function announce(text) {
  statusLine.textContent = '';
  // A change of text is what screen readers announce: clear first so a repeat is spoken too.
  setTimeout(function () {
    statusLine.textContent = text;
  }, 50);
}

const peopleView = new PeopleView(
  {
    panel: $('people-panel'),
    list: $('people'),
    form: /** @type {HTMLFormElement} */ ($('invite-form')),
    name: input$('invite-name'),
    minutes: input$('invite-minutes'),
    link: input$('invite-link'),
    linkRow: $('invite-link-row'),
    error: $('people-error'),
  },
  api,
  function (error) {
    return explainError(error);
  },
);

const mixerView = new MixerView(
  {
    panel: $('mixer-panel'),
    title: $('mixer-title'),
    status: $('mixer-status'),
    play: $('play'),
    time: $('time'),
    seek: $('seek'),
    stems: $('stems'),
    downloadAll: $('download-all'),
    downloadInstrumental: $('download-instrumental'),
    downloadMix: $('download-mix'),
    compare: $('compare'),
  },
  announce,
);

const library = new LibraryView(
  {
    library: $('library'),
    groups: $('library-groups'),
    empty: $('library-empty'),
    ensembleOptions: $('ensemble-options'),
    algorithm: $('ensemble-algorithm'),
    weights: $('ensemble-weights'),
    twoStems: $('two-stems'),
    bitDepthLabel: $('bit-depth-label'),
    bitDepth: $('bit-depth'),
    summary: $('choice-summary'),
    chain: $('chain'),
    chainSteps: $('chain-steps'),
    chainAdd: $('chain-add'),
    chainKeep: $('chain-keep'),
    twoStemsRow: $('two-stems-row'),
  },
  showPending,
);

function storedKey() {
  try {
    return localStorage.getItem(KEY_STORAGE) || '';
  } catch (ignored) {
    return '';
  }
}

function storeKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORAGE, key);
    else localStorage.removeItem(KEY_STORAGE);
  } catch (ignored) {
    /* storage disabled: the key lasts as long as the page */
  }
}

/** The key a "stemsplit serve" link carries in its fragment; the fragment is then cleared from the address bar. */
function keyFromFragment() {
  const match = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  if (!match) return '';
  history.replaceState(null, '', location.pathname + location.search);
  return decodeURIComponent(match[1]);
}

/** The one-time invite an admin's (or serve's) link carries in its fragment; the fragment is then cleared. */
function inviteFromFragment() {
  const match = /(?:^#|&)invite=([^&]+)/.exec(location.hash);
  if (!match) return '';
  history.replaceState(null, '', location.pathname + location.search);
  return decodeURIComponent(match[1]);
}

/** Exchanges an invite for this person's own key, which this browser then keeps. */
async function acceptInvite(invite) {
  try {
    const created = await api.exchangeInvite(invite);
    await connect(created.key);
  } catch (error) {
    showKeyPanel(explainError(error));
  }
}

function randomToken() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, function (b) {
    return b.toString(16).padStart(2, '0');
  }).join('');
}

function setError(element, message) {
  element.textContent = message || '';
  show(element, Boolean(message));
}

function forgetKey() {
  storeKey('');
  state.key = '';
}

/** Shows an API failure beside what failed; a refused key sends the user back to the key form. */
function report(element, error) {
  if (error instanceof ApiError && error.status === 401) {
    forgetKey();
    return showKeyPanel(explainError(error));
  }
  setError(element, explainError(error));
}

// ---- key ----

function showKeyPanel(message) {
  show($('key-panel'), true);
  show($('key-cancel'), Boolean(state.key));
  show($('upload-panel'), false);
  show($('history-panel'), false);
  show($('change-key'), false);
  show($('forget-key'), false);
  show($('people-panel'), false);
  setError($('key-error'), message);
  $('key-input').focus();
}

async function connect(key) {
  state.key = key;
  try {
    const credits = await api.credits();
    storeKey(key);
    await loadModels();
    showCredits(credits);
    show($('key-panel'), false);
    show($('upload-panel'), true);
    show($('history-panel'), true);
    show($('change-key'), true);
    show($('forget-key'), true);
    setError($('key-error'), '');
    input$('key-input').value = '';
    await loadHistory(false);
    await peopleView.load();
  } catch (error) {
    // A refused key is forgotten; an unreachable server keeps it, for "Keep the current key" to retry.
    if (error instanceof ApiError && error.status === 401) forgetKey();
    showKeyPanel(explainError(error));
  }
}

/** The server's models (to choose from, and to say which made each split, with their terms and times). */
async function loadModels() {
  try {
    library.load(await api.models());
  } catch (error) {
    report($('upload-error'), error);
  }
}

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
function modelLines(split) {
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

function showModel(element, split) {
  element.replaceChildren.apply(
    element,
    modelLines(split).map(function (line) {
      return h('span', { class: 'model-text' }, [line]);
    }),
  );
  show(element, true);
}

function showCredits(credits) {
  const element = $('credits');
  state.balance = credits.balance;
  if (state.pending.length > 0) showPending();
  element.textContent = formatTime(credits.balance) + ' of audio left';
  element.title = credits.balance + ' credits: one credit splits one second of audio';
  show(element, true);
}

async function refreshCredits() {
  try {
    showCredits(await api.credits());
  } catch (ignored) {
    /* the next action reports it */
  }
}

$('key-form').addEventListener('submit', function (event) {
  event.preventDefault();
  const key = input$('key-input').value.trim();
  if (key) connect(key);
});

$('change-key').addEventListener('click', function () {
  showKeyPanel('');
});
$('forget-key').addEventListener('click', function () {
  forgetKey();
  showKeyPanel('This browser no longer keeps your key. Open your invite link again, or paste your key, to come back.');
});
$('key-cancel').addEventListener('click', function () {
  connect(state.key);
});

// ---- upload and split ----

function setJob(name, stage, percent) {
  show($('job'), true);
  $('job-name').textContent = name;
  $('job-stage').textContent = stage;
  const bar = /** @type {HTMLProgressElement} */ ($('job-progress'));
  if (percent === undefined) bar.removeAttribute('value');
  else bar.value = percent;
}

function setBusy(busy) {
  state.busy = busy;
  input$('file-input').disabled = busy;
  $('drop-zone').classList.toggle('is-busy', busy);
}

/** Reserves, uploads and starts the split of one file as `choice` says; its job id. Throws what the API refused. */
async function startSplit(file, choice) {
  const contentType = contentTypeOf(file);
  announce('Uploading ' + file.name);
  setJob(file.name, 'Reserving the upload\u2026', undefined);
  const reservation = await api.reserveUpload(file, contentType);
  setJob(file.name, 'Uploading 0%', 0);
  const stored = await api.uploadBytes(reservation.uploadUrl, reservation.uploadHeaders, file, contentType, function (fraction) {
    setJob(file.name, 'Uploading ' + Math.round(fraction * 100) + '%', fraction * 100);
  });
  setJob(file.name, 'Starting the split\u2026', undefined);
  const input = { type: 'uploaded_file', uploadId: reservation.uploadId, fileUrl: stored.url, storageKey: stored.key };
  const created = await api.createSplit(input, choice.body, randomToken());
  refreshCredits();
  await loadHistory(false);
  return created.id;
}

/** What a refused split is put in numbers and names with: the song's length, the account's balance, the models asked for. */
async function songFacts(file, choice) {
  const [seconds, credits] = await Promise.all([
    songSeconds(file),
    api.credits().catch(function () {
      return undefined;
    }),
  ]);
  if (credits) showCredits(credits);
  return { songSeconds: seconds, balance: credits ? credits.balance : undefined, models: choice.members };
}

/**
 * Holds the dropped or chosen files until "Split": their length, with the choice, says how long
 * they will take on this server and how many credits they use.
 */
async function stageFiles(files) {
  if (state.busy) return;
  setError($('upload-error'), '');
  const problems = [];
  const accepted = [];
  for (const file of files) {
    const problem = fileProblem(file);
    if (problem) problems.push(files.length > 1 ? file.name + ': ' + problem : problem);
    else accepted.push(file);
  }
  if (problems.length > 0) setError($('upload-error'), problems.join(' '));
  if (accepted.length === 0) return;
  const lengths = await Promise.all(accepted.map(songSeconds));
  state.pending = accepted.map(function (file, i) {
    return { file: file, seconds: lengths[i] };
  });
  const known = lengths.every(function (seconds) {
    return seconds !== undefined;
  });
  library.setSongSeconds(
    known
      ? lengths.reduce(function (sum, seconds) {
          return sum + seconds;
        }, 0)
      : undefined,
  );
  $('start').focus();
}

/** The songs waiting for "Split", each with its length, and what the current choice will do with them. */
function showPending() {
  const pending = state.pending;
  show($('pending'), pending.length > 0);
  if (pending.length === 0) return;
  const list = $('pending-files');
  list.replaceChildren.apply(
    list,
    pending.map(function (song) {
      return h('li', {}, [song.file.name + ' \u00b7 ' + (song.seconds === undefined ? 'length unknown' : formatTime(song.seconds))]);
    }),
  );
  const choice = library.choice();
  const short = shortOfTime(pending);
  $('pending-estimate').textContent = short || choice.problem || library.estimateWords(choice.members) + '.';
  $('start').textContent = pending.length > 1 ? 'Split ' + pending.length + ' songs' : 'Split';
  /** @type {HTMLButtonElement} */ ($('start')).disabled = state.busy || Boolean(choice.problem) || Boolean(short);
}

/**
 * Why the balance cannot pay for the waiting songs, refused before anything is uploaded; empty when
 * it can, or when a length is unknown (the server then decides, 402).
 * @param {{file: File, seconds: number | undefined}[]} pending
 */
function shortOfTime(pending) {
  if (
    state.balance === undefined ||
    pending.some(function (song) {
      return song.seconds === undefined;
    })
  )
    return '';
  const total = pending.reduce(function (sum, song) {
    return sum + /** @type {number} */ (song.seconds);
  }, 0);
  return total > state.balance ? notEnoughCredits({ songSeconds: total, balance: state.balance, songs: pending.length }) : '';
}

function clearPending() {
  state.pending = [];
  library.setSongSeconds(undefined);
}

$('start').addEventListener('click', function () {
  const choice = library.choice();
  if (choice.problem) return setError($('upload-error'), choice.problem);
  const files = state.pending.map(function (song) {
    return song.file;
  });
  clearPending();
  splitFiles(files, choice);
});
$('pending-clear').addEventListener('click', clearPending);

/**
 * Splits the files as `choice` says: each is uploaded and its job created in turn, so every one
 * has its row at once; the server runs them one after another, and the page follows each in turn.
 */
async function splitFiles(files, choice) {
  if (state.busy) return;
  state.batchProblems = '';
  setError($('upload-error'), '');
  setBusy(true);
  const started = [];
  /** What went wrong with each file that did not start, naming it; the others go on. */
  const failed = [];
  for (const file of files) {
    try {
      started.push({ id: await startSplit(file, choice), name: file.name });
    } catch (error) {
      show($('job'), false);
      // A refused key or a server out of reach stops the batch: the next file would meet the same.
      if (!(error instanceof ApiError) || error.status === 401 || error.status === 0) {
        report($('upload-error'), error);
        failed.length = 0;
        break;
      }
      const why =
        error.code === 'INSUFFICIENT_CREDITS' || error.call === 'createSplit' ? explainError(error, await songFacts(file, choice)) : explainError(error);
      failed.push(files.length > 1 ? '"' + file.name + '": ' + why : why);
      // A model refused may have been removed or barred since the page listed it.
      if (error.code === 'VALIDATION_ERROR' && error.call === 'createSplit') await loadModels();
    }
  }
  if (failed.length > 0) {
    state.batchProblems = failed.join(' ');
    setError($('upload-error'), state.batchProblems);
    announce(failed.length === files.length ? 'The split could not start' : 'Some songs could not start; the others are splitting');
  }
  try {
    for (const job of started) await follow(job.id, job.name);
  } finally {
    setBusy(false);
  }
}

/** A queued job's place, in words: the server counts every account's jobs ahead of it. */
function queueWords(position) {
  if (!position) return 'Waiting for its turn\u2026';
  return position === 1 ? 'Next in the queue\u2026' : 'Waiting for its turn: number ' + position + ' in the queue\u2026';
}

/**
 * Time left from the rate measured while this page watches the job: progress gained over the time
 * it took, from the first moment it was seen splitting. Nothing until it has moved for 2 s.
 */
class Pace {
  constructor() {
    /** @type {{progress: number, at: number} | undefined} */
    this.first = undefined;
  }

  /** @param {number} progress @param {number} at milliseconds @returns {number | undefined} seconds */
  secondsLeft(progress, at) {
    if (!this.first) this.first = { progress: progress, at: at };
    const gained = progress - this.first.progress;
    const elapsed = at - this.first.at;
    if (gained <= 0 || elapsed < 2000) return undefined;
    return ((100 - progress) * elapsed) / gained / 1000;
  }
}

/** Polls a job until it ends, showing its progress; opens it in the mixer when it succeeds. */
async function follow(id, name) {
  const ticket = ++state.following;
  let lastStatus = '';
  const pace = new Pace();
  setError($('upload-error'), state.batchProblems);
  for (;;) {
    let split;
    try {
      split = await api.split(id);
    } catch (error) {
      if (ticket !== state.following) return;
      if (error instanceof ApiError && error.status === 0) {
        setJob(name, 'Lost contact with the server, retrying\u2026', undefined);
        await delay(RETRY_MS);
        continue;
      }
      show($('job'), false);
      return report($('upload-error'), error);
    }
    if (ticket !== state.following) return;
    showModel($('job-model'), split);
    updateHistoryRow(split);
    if (split.status !== lastStatus) announce(name + ': ' + STATUS_WORDS[split.status]);
    lastStatus = split.status;
    if (split.status === 'queued') setJob(name, queueWords(split.queuePosition), 0);
    if (split.status === 'processing') {
      const left = pace.secondsLeft(split.progress, Date.now());
      const step = split.chain ? ' (step ' + split.chainStep + ' of ' + split.chain.length + ')' : '';
      setJob(
        name,
        'Splitting ' +
          split.progress +
          '%' +
          step +
          (split.device ? ' on ' + split.device : '') +
          (left === undefined ? '' : ' \u00b7 about ' + spanWords(left) + ' left'),
        split.progress,
      );
    }
    if (split.status === 'failed') {
      show($('job'), false);
      // A split cancelled on this page (or by the API) needs no error: its row says it.
      if (!isCancelled(split)) setError($('upload-error'), explainJobFailure(split.error));
      refreshCredits();
      loadHistory(false);
      loadModels(); // a model removed meanwhile is no longer offered
      return;
    }
    if (split.status === 'succeeded') {
      setJob(name, 'Done', 100);
      loadHistory(false);
      loadModels(); // the job measured its models' time on this server
      await openInMixer(split);
      if (ticket === state.following) show($('job'), false);
      return;
    }
    await delay(POLL_MS);
  }
}

function delay(ms) {
  return new Promise(function (resolve) {
    setTimeout(resolve, ms);
  });
}

/**
 * Opens a split of the list, asking for it afresh when its signed stem URLs (valid for the
 * server's stem-URL lifetime from when the list was loaded) may have expired meanwhile.
 */
async function openListed(split, listedAt) {
  const limits = serverLimits();
  const lifetimeMs = limits ? limits.stemUrlTtlSeconds * 1000 : 0;
  if (Date.now() - listedAt < lifetimeMs - 60_000) return openInMixer(split);
  try {
    await openInMixer(await api.split(split.id));
  } catch (error) {
    report($('history-error'), error);
  }
}

async function openInMixer(split) {
  showModel($('mixer-model'), split);
  try {
    await mixerView.open(split);
  } catch (error) {
    mixerView.fail('The stems could not be played: ' + (error && error.message ? error.message : String(error)) + '.');
  }
}

$('file-input').addEventListener('change', function () {
  const input = input$('file-input');
  const files = input.files ? Array.from(input.files) : [];
  if (files.length > 0) stageFiles(files);
  input.value = '';
});

// Dropping anywhere on the page works; without this a stray drop would navigate away to the file.
let dragDepth = 0;
window.addEventListener('dragenter', function (event) {
  event.preventDefault();
  dragDepth++;
  $('drop-zone').classList.add('is-dragging');
});
window.addEventListener('dragleave', function () {
  dragDepth = Math.max(0, dragDepth - 1);
  if (dragDepth === 0) $('drop-zone').classList.remove('is-dragging');
});
window.addEventListener('dragover', function (event) {
  event.preventDefault();
  if (event.dataTransfer) event.dataTransfer.dropEffect = state.key && !state.busy ? 'copy' : 'none';
});
window.addEventListener('drop', function (event) {
  event.preventDefault();
  dragDepth = 0;
  $('drop-zone').classList.remove('is-dragging');
  const files = event.dataTransfer ? Array.from(event.dataTransfer.files) : [];
  if (files.length === 0) return;
  if (!state.key) return showKeyPanel('Connect with an API key first, then drop the songs again.');
  stageFiles(files);
});

// ---- past jobs ----

/** What a split makes: `Vocals + instrumental`, `Drums + the rest`, its model's task (`4 stems`, `De-reverb`), or `Ensemble`. */
function kindWords(split) {
  if (split.twoStems) return capitalized(split.twoStems) + ' + ' + (split.twoStems === 'vocals' ? 'instrumental' : 'the rest');
  const members = split.models;
  if (split.chain) return 'Chain of ' + split.chain.length;
  if (members.length > 1) return 'Ensemble';
  const model = library.model(members[0]);
  return model ? TASK_NAMES[model.task] || model.task : split.stemModel === '6s' ? '6 stems' : '4 stems';
}

/** Which models ran: `htdemucs`, or `a + b (avg_wave)` for an ensemble. */
function ranWords(split) {
  const members = split.models;
  if (split.chain) return chainWords(split.chain);
  return members.length > 1 ? members.join(' + ') + ' (' + ensembleWords(split) + ')' : members[0];
}

function capitalized(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function historyItem(split) {
  const expired = split.status === 'succeeded' && !split.stems;
  const when = new Date(split.createdAt).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  const meta = [kindWords(split), ranWords(split), formatWords(split.outputFormat, split.bitDepth), formatTime(split.durationSeconds), when].join(' \u00b7 ');
  const badgeText = expired
    ? 'Expired'
    : isCancelled(split)
      ? 'Cancelled'
      : split.status === 'processing'
        ? 'Splitting ' + split.progress + '%'
        : STATUS_WORDS[split.status];
  const details = [
    h('span', { class: 'history-name' }, [split.filename]),
    h('span', { class: 'history-meta', title: 'Terms of ' + library.termsWords(split.models) }, [meta]),
  ];
  if (isCancelled(split)) details.push(h('span', { class: 'history-why' }, ['Cancelled: no stems were kept and its credits were refunded.']));
  else if (split.status === 'failed') details.push(h('span', { class: 'history-why' }, [explainJobFailure(split.error)]));
  if (expired) details.push(h('span', { class: 'history-why' }, ['The stems were removed after ' + retentionWords() + '.']));
  const children = [h('div', { class: 'history-main' }, details), h('span', { class: 'badge badge-' + (expired ? 'expired' : split.status) }, [badgeText])];
  if (split.status === 'succeeded' && split.stems) {
    const listedAt = Date.now();
    children.push(
      h(
        'button',
        {
          type: 'button',
          'aria-label': 'Open ' + split.filename + ' in the mixer',
          onclick: function () {
            openListed(split, listedAt);
          },
        },
        ['Open'],
      ),
    );
  } else if (split.status === 'queued' || split.status === 'processing') {
    children.push(
      h(
        'button',
        {
          type: 'button',
          'aria-label': 'Follow the progress of ' + split.filename,
          onclick: function () {
            follow(split.id, split.filename);
          },
        },
        ['Follow'],
      ),
    );
    children.push(
      h(
        'button',
        {
          type: 'button',
          'aria-label': 'Cancel the split of ' + split.filename,
          onclick: function () {
            cancelListed(split);
          },
        },
        ['Cancel'],
      ),
    );
  }
  if (split.status === 'succeeded' || split.status === 'failed') {
    children.push(
      h(
        'button',
        {
          type: 'button',
          class: 'quiet',
          'aria-label': 'Delete ' + split.filename + ' and its stems',
          onclick: function () {
            deleteListed(split);
          },
        },
        ['Delete'],
      ),
    );
  }
  return h('li', { class: 'history-item', 'data-split': split.id }, children);
}

/** Deletes a finished split: its song and stems leave the server's disk, and its row the list. */
async function deleteListed(split) {
  if (!window.confirm('Delete "' + split.filename + '" and its stems from the server? This cannot be undone.')) return;
  try {
    await api.deleteSplit(split.id);
    const row = $('history').querySelector('li[data-split="' + CSS.escape(split.id) + '"]');
    if (row) row.remove();
    show($('history-empty'), $('history').children.length === 0);
    announce(split.filename + ': deleted');
  } catch (error) {
    report($('history-error'), error);
  }
}

function isCancelled(split) {
  return split.status === 'failed' && Boolean(split.error) && split.error.code === 'CANCELLED';
}

/** Cancels a queued or running split: the server stops it, keeps no stems and refunds its credits. */
async function cancelListed(split) {
  try {
    const cancelled = await api.cancelSplit(split.id);
    updateHistoryRow(cancelled);
    announce(split.filename + ': cancelled');
    refreshCredits();
  } catch (error) {
    report($('history-error'), error);
  }
}

/** Redraws the row of a split the page is following, so the list shows the same progress as the job line. */
function updateHistoryRow(split) {
  const row = $('history').querySelector('li[data-split="' + CSS.escape(split.id) + '"]');
  if (row) row.replaceWith(historyItem(split));
}

async function loadHistory(more) {
  try {
    const page = await api.listSplits(more ? state.cursor : null);
    state.cursor = page.nextCursor;
    const list = $('history');
    const items = page.items.map(historyItem);
    if (more) list.append.apply(list, items);
    else list.replaceChildren.apply(list, items);
    show($('history-empty'), list.children.length === 0);
    show($('history-more'), Boolean(page.nextCursor));
    setError($('history-error'), '');
    // Jobs still running (made here, by the CLI or by a script) keep their rows moving.
    const running = page.items.some(function (split) {
      return split.status === 'queued' || split.status === 'processing';
    });
    clearTimeout(state.historyTimer);
    if (running && !more)
      state.historyTimer = setTimeout(function () {
        loadHistory(false);
      }, HISTORY_REFRESH_MS);
  } catch (error) {
    report($('history-error'), error);
  }
}

$('history-more').addEventListener('click', function () {
  loadHistory(true);
});
$('history-refresh').addEventListener('click', function () {
  loadHistory(false);
});

// ---- keyboard: space plays and pauses unless a control that uses space has the focus ----

document.addEventListener('keydown', function (event) {
  if (event.key !== ' ' || event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return;
  const target = /** @type {Element} */ (event.target);
  const typing = target.closest && target.closest('button, a, select, textarea, summary, [contenteditable], input:not([type="range"])');
  if (typing || !mixerView.ready) return;
  event.preventDefault();
  mixerView.toggle();
});

/** The drop zone's line: what this server takes, from its limits. */
function showAccepted() {
  const size = uploadLimitWords();
  $('drop-hint').textContent =
    acceptedKinds() + (size ? ', up to ' + size + ' each' : '') + '; several split one after another. One second of audio uses one credit.';
}

const invite = inviteFromFragment();
const initialKey = keyFromFragment() || storedKey();
loadLimits().then(showAccepted);
if (invite) acceptInvite(invite);
else if (initialKey) connect(initialKey);
else showKeyPanel('');

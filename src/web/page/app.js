// @ts-check
/**
 * Browser module `/web/app.js`: the page's controller. The key (from the `#key=` link or pasted),
 * the upload → reservation → split → progress flow, and the keyboard; it wires the views (the
 * library, the songs waiting, the key's past jobs, the mixer, the people) to the page's elements.
 */
import { ApiError, createApi } from './api.js';
import { formatTime, h, setError, show } from './dom.js';
import { watchDrops } from './drop-zone.js';
import { explainError, explainJobFailure } from './error-words.js';
import { HistoryView } from './history-view.js';
import { JobLine } from './job-line.js';
import { inviteFromFragment, keyFromFragment, storedKey, storeKey } from './key-store.js';
import { LibraryView } from './library-view.js';
import { MixerView } from './mixer-view.js';
import { PendingView } from './pending-view.js';
import { PeopleView } from './people-view.js';
import { acceptedKinds, loadLimits, uploadLimitWords } from './server-limits.js';
import { contentTypeOf, songSeconds } from './song-files.js';
import { isCancelled, modelLines, STATUS_WORDS } from './split-words.js';

const POLL_MS = 1000;
const RETRY_MS = 3000;
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
  /** @type {number | undefined} the account's balance in seconds, as last read */
  balance: undefined,
  /** What the last batch could not start, naming each file: shown while its other songs split. */
  batchProblems: '',
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
  function () {
    pendingView.draw();
  },
);

const jobLine = new JobLine({ panel: $('job'), name: $('job-name'), stage: $('job-stage'), progress: $('job-progress') });

const pendingView = new PendingView(
  {
    panel: $('pending'),
    files: $('pending-files'),
    estimate: $('pending-estimate'),
    start: $('start'),
    clear: $('pending-clear'),
    error: $('upload-error'),
  },
  library,
  {
    busy: function () {
      return state.busy;
    },
    balance: function () {
      return state.balance;
    },
    split: splitFiles,
  },
);

const historyView = new HistoryView(
  { list: $('history'), empty: $('history-empty'), more: $('history-more'), refresh: $('history-refresh'), error: $('history-error') },
  api,
  library,
  { open: openInMixer, follow: follow, report: report, announce: announce, refreshCredits: refreshCredits },
);

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
    await historyView.load(false);
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

function showModel(element, split) {
  element.replaceChildren.apply(
    element,
    modelLines(split, library).map(function (line) {
      return h('span', { class: 'model-text' }, [line]);
    }),
  );
  show(element, true);
}

function showCredits(credits) {
  const element = $('credits');
  state.balance = credits.balance;
  if (pendingView.songs.length > 0) pendingView.draw();
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

function setBusy(busy) {
  state.busy = busy;
  input$('file-input').disabled = busy;
  $('drop-zone').classList.toggle('is-busy', busy);
}

/** Reserves, uploads and starts the split of one file as `choice` says; its job id. Throws what the API refused. */
async function startSplit(file, choice) {
  const contentType = contentTypeOf(file);
  announce('Uploading ' + file.name);
  jobLine.set(file.name, 'Reserving the upload\u2026', undefined);
  const reservation = await api.reserveUpload(file, contentType);
  jobLine.set(file.name, 'Uploading 0%', 0);
  const stored = await api.uploadBytes(reservation.uploadUrl, reservation.uploadHeaders, file, contentType, function (fraction) {
    jobLine.set(file.name, 'Uploading ' + Math.round(fraction * 100) + '%', fraction * 100);
  });
  jobLine.set(file.name, 'Starting the split\u2026', undefined);
  const input = { type: 'uploaded_file', uploadId: reservation.uploadId, fileUrl: stored.url, storageKey: stored.key };
  const created = await api.createSplit(input, choice.body, randomToken());
  refreshCredits();
  await historyView.load(false);
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
      jobLine.hide();
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

/** Polls a job until it ends, showing its progress; opens it in the mixer when it succeeds. */
async function follow(id, name) {
  const ticket = ++state.following;
  let lastStatus = '';
  jobLine.restart();
  setError($('upload-error'), state.batchProblems);
  for (;;) {
    let split;
    try {
      split = await api.split(id);
    } catch (error) {
      if (ticket !== state.following) return;
      if (error instanceof ApiError && error.status === 0) {
        jobLine.set(name, 'Lost contact with the server, retrying\u2026', undefined);
        await delay(RETRY_MS);
        continue;
      }
      jobLine.hide();
      return report($('upload-error'), error);
    }
    if (ticket !== state.following) return;
    showModel($('job-model'), split);
    historyView.update(split);
    if (split.status !== lastStatus) announce(name + ': ' + STATUS_WORDS[split.status]);
    lastStatus = split.status;
    jobLine.progress(name, split);
    if (split.status === 'failed') {
      jobLine.hide();
      // A split cancelled on this page (or by the API) needs no error: its row says it.
      if (!isCancelled(split)) setError($('upload-error'), explainJobFailure(split.error));
      refreshCredits();
      historyView.load(false);
      loadModels(); // a model removed meanwhile is no longer offered
      return;
    }
    if (split.status === 'succeeded') {
      jobLine.set(name, 'Done', 100);
      historyView.load(false);
      loadModels(); // the job measured its models' time on this server
      await openInMixer(split);
      if (ticket === state.following) jobLine.hide();
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

async function openInMixer(split) {
  showModel($('mixer-model'), split);
  try {
    await mixerView.open(split);
  } catch (error) {
    mixerView.fail('The stems could not be played: ' + (error && error.message ? error.message : String(error)) + '.');
  }
}

watchDrops(
  { zone: $('drop-zone'), input: input$('file-input') },
  {
    accepting: function () {
      return Boolean(state.key && !state.busy);
    },
    chosen: function (files) {
      pendingView.stage(files);
    },
    dropped: function (files) {
      if (!state.key) return showKeyPanel('Connect with an API key first, then drop the songs again.');
      pendingView.stage(files);
    },
  },
);

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

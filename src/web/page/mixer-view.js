// @ts-check
/**
 * Browser module `/web/mixer-view.js`: the mixer panel. Fetches a job's signed stem URLs, decodes
 * them with Web Audio, and draws one row per stem (meter, mute, solo, volume, waveform, download)
 * under a shared transport (play/pause, time, seek); exports every stem as a zip, the instrumental
 * (the mix set but its vocals) and the current mix as WAV rendered from the same buffers the mixer plays.
 * Only the job's mix set (`mixStems`: the stems that add up to the song, each part once) plays at
 * first: a stem that repeats others (an ensemble's no_vocals beside drums, bass and other) starts muted.
 */
import { formatTime, h, icon, show, songBaseName, spokenTime } from './dom.js';
import { Mixer } from './mixer.js';
import { retentionWords } from './server-limits.js';
import { typeOfExtension } from './song-files.js';
import { computePeaks, drawWaveform, peakMagnitude } from './waveform.js';
import { wavBlob } from './wav.js';
import { zipStore } from './zip.js';

const STEM_COLORS = {
  vocals: '#f472b6',
  drums: '#fbbf24',
  bass: '#60a5fa',
  other: '#a78bfa',
  guitar: '#34d399',
  piano: '#fb923c',
};
const FALLBACK_COLORS = ['#f472b6', '#fbbf24', '#60a5fa', '#a78bfa', '#34d399', '#fb923c'];
const STEM_ORDER = ['vocals', 'drums', 'bass', 'guitar', 'piano', 'other'];
/** The track of the source itself (A/B). */
const ORIGINAL = 'original';
const METER_FLOOR_DB = -60;
const WAVE_HEADROOM = 0.95;
const SILENCE = 1e-4;

/** An RMS level as the fill of a meter: -60 dBFS and below empty, 0 dBFS full. */
function meterFill(rms) {
  if (rms <= 0) return 0;
  return Math.max(0, Math.min(1, 1 - (20 * Math.log10(rms)) / METER_FLOOR_DB));
}

/** The stems that add up to the song: the job's `mixStems`, or every stem for a job that does not say (made before it was kept, or one stem written). */
function mixSetOf(split) {
  const all = Object.keys(split.stems);
  return new Set(Array.isArray(split.mixStems) && split.mixStems.length > 0 ? split.mixStems : all);
}

/** A stem the instrumental leaves out: vocals by any name (lead_vocals, vocals-vocals), but not no_vocals. */
function isVocalStem(name) {
  return /vocal/i.test(name) && !/^no_/i.test(name);
}

function orderOf(name) {
  const index = STEM_ORDER.indexOf(name);
  return index < 0 ? STEM_ORDER.length : index;
}

async function fetchStem(name, url) {
  const response = await fetch(url, { cache: 'no-store' });
  if (!response.ok) {
    throw new Error(
      response.status === 404
        ? 'the ' + name + ' stem is gone from the server (stems are kept for ' + retentionWords() + ')'
        : 'the ' + name + ' stem could not be loaded (HTTP ' + response.status + ')',
    );
  }
  return new Uint8Array(await response.arrayBuffer());
}

export class MixerView {
  /** elements: {panel, title, status, play, time, seek, stems, downloadAll, downloadInstrumental, downloadMix, compare}; announce(text) speaks to screen readers. */
  constructor(elements, announce) {
    this.el = elements;
    this.announce = announce;
    this.context = null;
    this.mixer = null;
    this.rows = [];
    this.objectUrls = [];
    this.generation = 0;
    this.ready = false;
    this.scrubbing = false;
    this.lastSpokenSecond = -1;
    this.frame = 0;
    this.split = null;
    this.stems = [];
    /** Names of the stems that add up to the song (mixSetOf). */
    this.mixSet = new Set();
    this.bindTransport();
  }

  bindTransport() {
    const self = this;
    this.el.play.addEventListener('click', function () {
      self.toggle();
    });
    this.el.seek.addEventListener('input', function () {
      self.seekTo(Number(self.el.seek.value));
    });
    this.el.seek.addEventListener('pointerdown', function () {
      self.scrubbing = true;
    });
    window.addEventListener('pointerup', function () {
      self.scrubbing = false;
    });
    this.el.downloadAll.addEventListener('click', function () {
      self.downloadAll();
    });
    this.el.downloadInstrumental.addEventListener('click', function () {
      self.downloadInstrumental();
    });
    this.el.downloadMix.addEventListener('click', function () {
      self.downloadMix();
    });
    this.el.compare.addEventListener('click', function () {
      self.compare();
    });
  }

  /** A/B: the original alone, or back to the stems as they were mixed. */
  compare() {
    if (!this.ready || !this.mixer.tracks.has(ORIGINAL)) return;
    const hearingOriginal = this.mixer.only === ORIGINAL;
    this.mixer.setOnly(hearingOriginal ? null : ORIGINAL);
    this.el.compare.setAttribute('aria-pressed', String(!hearingOriginal));
    this.el.compare.textContent = hearingOriginal ? 'A/B: hear the original' : 'A/B: back to the stems';
    this.announce(hearingOriginal ? 'Playing the stems' : 'Playing the original');
    this.render();
  }

  /** Shows a finished job in the mixer; resolves once its stems are decoded and drawn. */
  async open(split) {
    const generation = ++this.generation;
    this.reset();
    this.split = split;
    show(this.el.panel, true);
    this.el.title.textContent = split.filename;
    this.setStatus('Loading ' + Object.keys(split.stems).length + ' stems\u2026');
    if (!this.context) this.context = new AudioContext();
    const names = Object.keys(split.stems).sort(function (a, b) {
      return orderOf(a) - orderOf(b);
    });
    const context = this.context;
    const format = split.outputFormat;
    let stems = await Promise.all(
      names.map(async function (name) {
        const bytes = await fetchStem(name, split.stems[name]);
        // decodeAudioData takes the buffer over: keep our own bytes for the downloads.
        const buffer = await context.decodeAudioData(bytes.slice().buffer);
        return { name: name, bytes: bytes, buffer: buffer, peaks: computePeaks(buffer), format: format };
      }),
    );
    if (generation !== this.generation) return;
    // The source itself, for A/B: one more track, muted until the user compares.
    const original = split.sourceUrl
      ? await loadOriginal(context, split).catch(function () {
          return null;
        })
      : null;
    if (original) stems = stems.concat([original]);
    if (generation !== this.generation) return;
    this.stems = stems;
    this.mixSet = mixSetOf(split);
    this.mixer = new Mixer(this.context);
    this.mixer.load(stems);
    const self = this;
    this.mixer.onEnded = function () {
      self.updatePlayButton();
      self.render();
    };
    this.el.seek.max = String(this.mixer.duration);
    this.el.seek.disabled = false;
    this.el.play.disabled = false;
    this.setExportsEnabled(true);
    const loudest = Math.max(
      SILENCE,
      Math.max.apply(
        null,
        stems.map(function (stem) {
          return peakMagnitude(stem.peaks);
        }),
      ),
    );
    const waveScale = WAVE_HEADROOM / loudest;
    this.el.stems.replaceChildren.apply(
      this.el.stems,
      stems.map(function (stem, i) {
        return self.buildRow(stem, i, waveScale);
      }),
    );
    const originalRow = this.rows.find(function (row) {
      return row.name === ORIGINAL;
    });
    // The original, and stems that repeat others, start muted: what plays adds up to the song once.
    for (const row of this.rows) if (!this.mixSet.has(row.name)) this.toggleFlag(row.name, 'muted', row.mute);
    show(this.el.compare, Boolean(originalRow));
    this.setStatus('');
    this.ready = true;
    this.render();
    this.announce('Stems of ' + split.filename + ' are ready. Press space to play.');
  }

  setStatus(text) {
    this.el.status.textContent = text;
    show(this.el.status, text !== '');
  }

  fail(message) {
    this.setStatus(message);
  }

  reset() {
    if (this.mixer) this.mixer.close();
    this.mixer = null;
    this.ready = false;
    this.rows = [];
    this.stems = [];
    for (const url of this.objectUrls) URL.revokeObjectURL(url);
    this.objectUrls = [];
    this.el.stems.replaceChildren();
    this.el.play.disabled = true;
    this.el.seek.disabled = true;
    this.setExportsEnabled(false);
    show(this.el.compare, false);
    this.el.compare.setAttribute('aria-pressed', 'false');
    this.el.compare.textContent = 'A/B: hear the original';
    this.el.seek.value = '0';
    this.updatePlayButton();
  }

  /** `Night Drive-vocals.flac`: a stem's download, named after the song, in its own format. */
  fileName(stemName, format) {
    // An ALAC stem is an .m4a file, as AAC's (the server's stem URLs end so too).
    return songBaseName(this.split.filename) + '-' + stemName + '.' + (format === 'alac' ? 'm4a' : format);
  }

  buildRow(stem, index, waveScale) {
    const self = this;
    const name = stem.name;
    const color = STEM_COLORS[name] || FALLBACK_COLORS[index % FALLBACK_COLORS.length];
    const format = stem.format;
    const url = URL.createObjectURL(new Blob([stem.bytes], { type: typeOfExtension(format) }));
    this.objectUrls.push(url);
    const meterFill = h('span', { class: 'meter-fill' });
    const mute = h('button', { type: 'button', class: 'toggle mute', 'aria-pressed': 'false', 'aria-label': 'Mute ' + name, title: 'Mute ' + name }, ['M']);
    const solo = h('button', { type: 'button', class: 'toggle solo', 'aria-pressed': 'false', 'aria-label': 'Solo ' + name, title: 'Solo ' + name }, ['S']);
    const volume = h('input', { type: 'range', class: 'volume', min: '0', max: '1', step: '0.01', value: '1', 'aria-label': name + ' volume' });
    const canvas = h('canvas', { class: 'wave-canvas', 'aria-hidden': 'true' });
    const played = h('span', { class: 'wave-played' });
    const wave = h('div', { class: 'wave' }, [canvas, played]);
    const label = format.toUpperCase();
    const download = h(
      'a',
      { class: 'button download', href: url, download: this.fileName(name, format), 'aria-label': 'Download ' + name + ' (' + label + ')' },
      [icon('download'), h('span', { class: 'download-label' }, [label])],
    );
    const repeats = name !== ORIGINAL && !this.mixSet.has(name);
    const nameParts = [h('span', {}, [name])];
    if (repeats)
      nameParts.push(
        h('span', { class: 'stem-note', title: 'Other stems here add up to it: it starts muted so the song is counted once' }, ['repeats others']),
      );
    nameParts.push(h('span', { class: 'meter', 'aria-hidden': 'true' }, [meterFill]));
    const row = h('li', { class: 'stem', 'data-stem': name, 'data-in-mix': String(name !== ORIGINAL && !repeats) }, [
      h('div', { class: 'stem-name' }, nameParts),
      h('div', { class: 'stem-buttons' }, [mute, solo]),
      volume,
      wave,
      download,
    ]);
    row.style.setProperty('--stem-color', color);
    mute.addEventListener('click', function () {
      self.toggleFlag(name, 'muted', mute);
    });
    solo.addEventListener('click', function () {
      self.toggleFlag(name, 'soloed', solo);
    });
    volume.addEventListener('input', function () {
      self.mixer.setVolume(name, Number(volume.value));
    });
    wave.addEventListener('pointerdown', function (event) {
      wave.setPointerCapture(event.pointerId);
      self.seekFromPointer(wave, event);
    });
    wave.addEventListener('pointermove', function (event) {
      if (wave.hasPointerCapture(event.pointerId)) self.seekFromPointer(wave, event);
    });
    new ResizeObserver(function () {
      drawWaveform(canvas, stem.peaks, color, waveScale);
    }).observe(canvas);
    this.rows.push({ name: name, row: row, played: played, meterFill: meterFill, mute: mute, solo: solo });
    return row;
  }

  toggleFlag(name, flag, button) {
    const on = button.getAttribute('aria-pressed') !== 'true';
    button.setAttribute('aria-pressed', String(on));
    if (flag === 'muted') this.mixer.setMuted(name, on);
    else this.mixer.setSoloed(name, on);
    this.render();
  }

  seekFromPointer(wave, event) {
    const rect = wave.getBoundingClientRect();
    const fraction = Math.max(0, Math.min(1, (event.clientX - rect.left) / rect.width));
    this.seekTo(fraction * this.mixer.duration);
  }

  seekTo(seconds) {
    if (!this.mixer) return;
    const self = this;
    this.mixer.seek(seconds).then(function () {
      self.render();
    });
    this.render();
  }

  async toggle() {
    if (!this.ready) return;
    await this.mixer.toggle();
    this.updatePlayButton();
    this.render();
  }

  updatePlayButton() {
    const playing = Boolean(this.mixer && this.mixer.playing);
    this.el.play.replaceChildren(icon(playing ? 'pause' : 'play'));
    this.el.play.setAttribute('aria-label', playing ? 'Pause' : 'Play');
    this.el.play.classList.toggle('is-playing', playing);
  }

  /** One frame: time, seek bar, played part of each waveform, meters; loops while playing. */
  render() {
    cancelAnimationFrame(this.frame);
    if (!this.mixer) return;
    const mixer = this.mixer;
    const position = mixer.position;
    const duration = mixer.duration;
    this.el.time.textContent = formatTime(position) + ' / ' + formatTime(duration);
    if (!this.scrubbing) this.el.seek.value = String(position);
    const second = Math.floor(position);
    if (second !== this.lastSpokenSecond) {
      this.lastSpokenSecond = second;
      this.el.seek.setAttribute('aria-valuetext', spokenTime(position) + ' of ' + spokenTime(duration));
    }
    const percent = duration > 0 ? (100 * position) / duration : 0;
    for (const row of this.rows) {
      row.played.style.width = percent + '%';
      const level = mixer.level(row.name);
      row.meterFill.style.transform = 'scaleX(' + meterFill(level) + ')';
      row.row.dataset.level = level.toFixed(4);
      row.row.classList.toggle('is-silent', !mixer.isAudible(row.name));
    }
    if (mixer.playing) {
      const self = this;
      this.frame = requestAnimationFrame(function () {
        self.render();
      });
    } else {
      this.updatePlayButton();
    }
  }

  setExportsEnabled(enabled) {
    this.el.downloadAll.disabled = !enabled;
    // The instrumental needs a vocal stem of the mix set to leave out.
    this.el.downloadInstrumental.disabled = !enabled || ![...this.mixSet].some(isVocalStem);
    this.el.downloadMix.disabled = !enabled;
  }

  downloadAll() {
    if (!this.ready) return;
    const self = this;
    const stems = this.stems.filter(function (stem) {
      return stem.name !== ORIGINAL;
    });
    const files = stems.map(function (stem) {
      return { name: self.fileName(stem.name, stem.format), bytes: stem.bytes };
    });
    saveBlob(zipStore(files), songBaseName(this.split.filename) + '-stems.zip');
  }

  /** The mix set but its vocals, each at full level, whatever the mixer's state (the original is no stem). */
  downloadInstrumental() {
    if (!this.ready) return;
    const mixSet = this.mixSet;
    const mix = this.mixer.mixdown(function (name) {
      return mixSet.has(name) && !isVocalStem(name) ? 1 : 0;
    });
    saveBlob(wavBlob(mix.channels, mix.sampleRate), songBaseName(this.split.filename) + '-instrumental.wav');
    this.announce('Instrumental saved');
  }

  /** What the mixer plays now (volumes, mutes, solos), for the whole song. */
  downloadMix() {
    if (!this.ready) return;
    const mix = this.mixer.mixdown();
    saveBlob(wavBlob(mix.channels, mix.sampleRate), songBaseName(this.split.filename) + '-mix.wav');
    this.announce('Mix saved');
  }
}

/** Hands a blob to the browser as a download. */
function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = h('a', { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(function () {
    URL.revokeObjectURL(url);
  }, 60000);
}

/** The job's source, decoded like the stems, as the `original` track (its download the file as uploaded). */
async function loadOriginal(context, split) {
  const bytes = await fetchStem(ORIGINAL, split.sourceUrl);
  const buffer = await context.decodeAudioData(bytes.slice().buffer);
  const extension = (/\.([A-Za-z0-9]{1,5})$/.exec(split.filename) || [])[1];
  return { name: ORIGINAL, bytes: bytes, buffer: buffer, peaks: computePeaks(buffer), format: extension ? extension.toLowerCase() : 'audio' };
}

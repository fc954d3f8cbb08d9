// @ts-check
/**
 * Browser module `/web/mixer.js`: the stems play in one AudioContext, one AudioBufferSourceNode
 * each, all started at the same context time, so they stay sample-aligned whatever the seeking.
 * Per stem: source → gain (volume, mute, solo) → analyser (its level meter) → master.
 */
const START_LEAD_SECONDS = 0.03;
const GAIN_SMOOTHING_SECONDS = 0.01;

export class Mixer {
  constructor(context) {
    this.context = context;
    this.master = context.createGain();
    this.master.connect(context.destination);
    this.tracks = new Map();
    this.duration = 0;
    this.offset = 0;
    this.startedAt = 0;
    this.playing = false;
    this.onEnded = function () {};
    this.levelData = new Float32Array(1024);
    /** When set, only this track sounds (A/B), whatever the mutes and solos say. */
    this.only = null;
  }

  /** stems: [{name, buffer: AudioBuffer}] */
  load(stems) {
    this.stop();
    for (const track of this.tracks.values()) track.analyser.disconnect();
    this.tracks.clear();
    this.duration = 0;
    this.offset = 0;
    for (const stem of stems) {
      const gain = this.context.createGain();
      const analyser = this.context.createAnalyser();
      analyser.fftSize = 1024;
      gain.connect(analyser);
      analyser.connect(this.master);
      this.tracks.set(stem.name, { buffer: stem.buffer, gain: gain, analyser: analyser, source: null, volume: 1, muted: false, soloed: false });
      this.duration = Math.max(this.duration, stem.buffer.duration);
    }
    this.applyGains();
  }

  get position() {
    if (!this.playing) return this.offset;
    return Math.min(this.duration, this.offset + Math.max(0, this.context.currentTime - this.startedAt));
  }

  async play() {
    if (this.playing || this.tracks.size === 0) return;
    if (this.context.state !== 'running') await this.context.resume();
    if (this.offset >= this.duration) this.offset = 0;
    const when = this.context.currentTime + START_LEAD_SECONDS;
    let first = true;
    for (const track of this.tracks.values()) {
      const source = this.context.createBufferSource();
      source.buffer = track.buffer;
      source.connect(track.gain);
      if (first) {
        // One stem's end stands for all: they have the same length.
        source.onended = this.handleEnded.bind(this, source);
        first = false;
      }
      source.start(when, this.offset);
      track.source = source;
    }
    this.startedAt = when;
    this.playing = true;
  }

  handleEnded(source) {
    const track = this.tracks.values().next().value;
    if (!this.playing || !track || track.source !== source) return; // stopped by pause or seek
    this.stop();
    this.offset = 0;
    this.onEnded();
  }

  pause() {
    if (!this.playing) return;
    this.offset = this.position;
    this.stop();
  }

  toggle() {
    return this.playing ? (this.pause(), Promise.resolve()) : this.play();
  }

  stop() {
    for (const track of this.tracks.values()) {
      if (track.source) {
        track.source.onended = null;
        try {
          track.source.stop();
        } catch (ignored) {
          /* never started */
        }
        track.source.disconnect();
        track.source = null;
      }
    }
    this.playing = false;
  }

  seek(seconds) {
    const wasPlaying = this.playing;
    this.stop();
    this.offset = Math.max(0, Math.min(this.duration, seconds));
    if (wasPlaying) return this.play();
    return Promise.resolve();
  }

  setVolume(name, volume) {
    this.tracks.get(name).volume = volume;
    this.applyGains();
  }

  setMuted(name, muted) {
    this.tracks.get(name).muted = muted;
    this.applyGains();
  }

  setSoloed(name, soloed) {
    this.tracks.get(name).soloed = soloed;
    this.applyGains();
  }

  track(name) {
    return this.tracks.get(name);
  }

  /** A/B: `name` alone, or (null) back to the mutes and solos as they were. */
  setOnly(name) {
    this.only = name;
    this.applyGains();
  }

  /** Solo wins over mute, as on a desk: with any stem soloed, only soloed stems sound. */
  isAudible(name) {
    if (this.only !== null) return name === this.only;
    const track = this.tracks.get(name);
    let anySolo = false;
    for (const other of this.tracks.values()) anySolo = anySolo || other.soloed;
    return anySolo ? track.soloed : !track.muted;
  }

  applyGains() {
    const now = this.context.currentTime;
    for (const [name, track] of this.tracks) {
      const target = this.isAudible(name) ? track.volume : 0;
      track.gain.gain.setTargetAtTime(target, now, GAIN_SMOOTHING_SECONDS);
    }
  }

  /** The gain a stem is heard at now: its volume when audible, else 0. */
  gainOf(name) {
    return this.isAudible(name) ? this.tracks.get(name).volume : 0;
  }

  /**
   * What the master bus plays for the whole song, as the graph computes it (each stem times its
   * gain, summed): one Float32Array per channel. `gainOf(name)` defaults to the mixer's state;
   * the instrumental export passes its own.
   */
  mixdown(gainOf) {
    const weigh = gainOf || this.gainOf.bind(this);
    const weighted = Array.from(this.tracks, function ([name, track]) {
      return { buffer: track.buffer, gain: weigh(name) };
    });
    const first = weighted[0];
    return { channels: sumBuffers(weighted), sampleRate: first ? first.buffer.sampleRate : this.context.sampleRate };
  }

  /** RMS of what the stem sends to the master right now, 0..1. */
  level(name) {
    const track = this.tracks.get(name);
    if (!this.playing) return 0;
    track.analyser.getFloatTimeDomainData(this.levelData);
    let sum = 0;
    for (let i = 0; i < this.levelData.length; i++) sum += this.levelData[i] * this.levelData[i];
    return Math.sqrt(sum / this.levelData.length);
  }

  close() {
    this.stop();
    this.tracks.clear();
  }
}

/**
 * Σ gain · buffer, per channel, as long as the first buffer (a later one shorter or longer by a
 * few samples, as the original of an A/B can be, is cut or padded): what a gain graph summed at
 * one bus computes. A mono buffer feeds every channel.
 * @param {{buffer: AudioBuffer, gain: number}[]} weighted
 * @returns {Float32Array[]}
 */
export function sumBuffers(weighted) {
  const first = weighted[0];
  const channels = first ? first.buffer.numberOfChannels : 2;
  const length = first ? first.buffer.length : 0;
  const out = Array.from({ length: channels }, function () {
    return new Float32Array(length);
  });
  for (const { buffer, gain } of weighted) {
    if (gain === 0) continue;
    for (let channel = 0; channel < channels; channel++) {
      const source = buffer.getChannelData(Math.min(channel, buffer.numberOfChannels - 1));
      const target = out[channel];
      const shared = Math.min(length, source.length);
      for (let i = 0; i < shared; i++) target[i] += gain * source[i];
    }
  }
  return out;
}

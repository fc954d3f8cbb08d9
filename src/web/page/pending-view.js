// @ts-check
/**
 * Browser module `/web/pending-view.js`: the songs dropped or chosen and waiting for "Split". Each
 * is listed with its length; with the library's choice, their length says how long they will take
 * on this server, and a balance too small for them is said before anything is uploaded.
 * @typedef {{file: File, seconds: number | undefined}} PendingSong
 * @typedef {import('./library-view.js').LibraryView} LibraryView
 */
import { formatTime, h, setError, show } from './dom.js';
import { notEnoughCredits } from './error-words.js';
import { fileProblem, songSeconds } from './song-files.js';

export class PendingView {
  /**
   * elements: {panel, files, estimate, start, clear, error}; library: what the songs will be split with;
   * page: {busy() whether songs are being started, balance() the seconds of audio left (undefined before
   * it is known), split(files, choice) splits the songs as the choice says}.
   */
  constructor(elements, /** @type {LibraryView} */ library, page) {
    this.el = elements;
    this.library = library;
    this.page = page;
    /** @type {PendingSong[]} the chosen songs, waiting for "Split" */
    this.songs = [];
    const self = this;
    elements.start.addEventListener('click', function () {
      const choice = library.choice();
      if (choice.problem) return setError(elements.error, choice.problem);
      const files = self.songs.map(function (song) {
        return song.file;
      });
      self.clear();
      page.split(files, choice);
    });
    elements.clear.addEventListener('click', function () {
      self.clear();
    });
  }

  /**
   * Holds the dropped or chosen files until "Split": their length, with the choice, says how long
   * they will take on this server and how many credits they use.
   */
  async stage(/** @type {File[]} */ files) {
    if (this.page.busy()) return;
    setError(this.el.error, '');
    const problems = [];
    const accepted = [];
    for (const file of files) {
      const problem = fileProblem(file);
      if (problem) problems.push(files.length > 1 ? file.name + ': ' + problem : problem);
      else accepted.push(file);
    }
    if (problems.length > 0) setError(this.el.error, problems.join(' '));
    if (accepted.length === 0) return;
    const lengths = await Promise.all(accepted.map(songSeconds));
    this.songs = accepted.map(function (file, i) {
      return { file: file, seconds: lengths[i] };
    });
    const known = lengths.every(function (seconds) {
      return seconds !== undefined;
    });
    this.library.setSongSeconds(
      known
        ? lengths.reduce(function (sum, seconds) {
            return sum + seconds;
          }, 0)
        : undefined,
    );
    this.el.start.focus();
  }

  /** The songs waiting for "Split", each with its length, and what the current choice will do with them. */
  draw() {
    const pending = this.songs;
    show(this.el.panel, pending.length > 0);
    if (pending.length === 0) return;
    const list = this.el.files;
    list.replaceChildren.apply(
      list,
      pending.map(function (song) {
        return h('li', {}, [song.file.name + ' \u00b7 ' + (song.seconds === undefined ? 'length unknown' : formatTime(song.seconds))]);
      }),
    );
    const choice = this.library.choice();
    const short = this.shortOfTime(pending);
    this.el.estimate.textContent = short || choice.problem || this.library.estimateWords(choice.members) + '.';
    this.el.start.textContent = pending.length > 1 ? 'Split ' + pending.length + ' songs' : 'Split';
    /** @type {HTMLButtonElement} */ (this.el.start).disabled = this.page.busy() || Boolean(choice.problem) || Boolean(short);
  }

  /**
   * Why the balance cannot pay for the waiting songs, refused before anything is uploaded; empty when
   * it can, or when a length is unknown (the server then decides, 402).
   * @param {PendingSong[]} pending
   */
  shortOfTime(pending) {
    const balance = this.page.balance();
    if (
      balance === undefined ||
      pending.some(function (song) {
        return song.seconds === undefined;
      })
    )
      return '';
    const total = pending.reduce(function (sum, song) {
      return sum + /** @type {number} */ (song.seconds);
    }, 0);
    return total > balance ? notEnoughCredits({ songSeconds: total, balance: balance, songs: pending.length }) : '';
  }

  /** Forgets the waiting songs (they were started, or the musician cleared them). */
  clear() {
    this.songs = [];
    this.library.setSongSeconds(undefined);
  }
}

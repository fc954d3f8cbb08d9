// @ts-check
/**
 * Browser module `/web/history-view.js`: the key's past jobs, ten at a time, newest first. Each row
 * says what the split made, with which models, into which files and how it stands, and offers Open,
 * Follow, Cancel or Delete; while a job of the list runs (made here, by the CLI or by a script) the
 * list keeps reading itself again.
 */
import { formatTime, h, setError, show } from './dom.js';
import { explainJobFailure } from './error-words.js';
import { formatWords } from './model-words.js';
import { retentionWords, serverLimits } from './server-limits.js';
import { isCancelled, kindWords, ranWords, STATUS_WORDS } from './split-words.js';

const HISTORY_REFRESH_MS = 2000;

export class HistoryView {
  /**
   * elements: {list, empty, more, refresh, error}; api: the page's API client; library: the LibraryView (models' tasks and terms);
   * actions: {open(split) opens a split in the mixer, follow(id, name) follows a running one, report(element, error) shows a
   * failure beside what failed, announce(text) says what happened, refreshCredits() reads the balance again}.
   */
  constructor(elements, api, library, actions) {
    this.el = elements;
    this.api = api;
    this.library = library;
    this.actions = actions;
    this.cursor = null;
    this.timer = undefined;
    const self = this;
    elements.more.addEventListener('click', function () {
      self.load(true);
    });
    elements.refresh.addEventListener('click', function () {
      self.load(false);
    });
  }

  /** Reads the first page of the list again, or (`more`) the next page below it. */
  async load(more) {
    const self = this;
    try {
      const page = await this.api.listSplits(more ? this.cursor : null);
      this.cursor = page.nextCursor;
      const list = this.el.list;
      const items = page.items.map(function (split) {
        return self.item(split);
      });
      if (more) list.append.apply(list, items);
      else list.replaceChildren.apply(list, items);
      show(this.el.empty, list.children.length === 0);
      show(this.el.more, Boolean(page.nextCursor));
      setError(this.el.error, '');
      // Jobs still running (made here, by the CLI or by a script) keep their rows moving.
      const running = page.items.some(function (split) {
        return split.status === 'queued' || split.status === 'processing';
      });
      clearTimeout(this.timer);
      if (running && !more)
        this.timer = setTimeout(function () {
          self.load(false);
        }, HISTORY_REFRESH_MS);
    } catch (error) {
      this.actions.report(this.el.error, error);
    }
  }

  /** One split's row: what it made, with which models, its files and status, and what can be done with it. */
  item(split) {
    const self = this;
    const expired = split.status === 'succeeded' && !split.stems;
    const when = new Date(split.createdAt).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    const meta = [
      kindWords(split, this.library),
      ranWords(split),
      formatWords(split.outputFormat, split.bitDepth),
      formatTime(split.durationSeconds),
      when,
    ].join(' \u00b7 ');
    const badgeText = expired
      ? 'Expired'
      : isCancelled(split)
        ? 'Cancelled'
        : split.status === 'processing'
          ? 'Splitting ' + split.progress + '%'
          : STATUS_WORDS[split.status];
    const details = [
      h('span', { class: 'history-name' }, [split.filename]),
      h('span', { class: 'history-meta', title: 'Terms of ' + this.library.termsWords(split.models) }, [meta]),
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
              self.openListed(split, listedAt);
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
              self.actions.follow(split.id, split.filename);
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
              self.cancel(split);
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
              self.delete(split);
            },
          },
          ['Delete'],
        ),
      );
    }
    return h('li', { class: 'history-item', 'data-split': split.id }, children);
  }

  /** Deletes a finished split: its song and stems leave the server's disk, and its row the list. */
  async delete(split) {
    if (!window.confirm('Delete "' + split.filename + '" and its stems from the server? This cannot be undone.')) return;
    try {
      await this.api.deleteSplit(split.id);
      const row = this.el.list.querySelector('li[data-split="' + CSS.escape(split.id) + '"]');
      if (row) row.remove();
      show(this.el.empty, this.el.list.children.length === 0);
      this.actions.announce(split.filename + ': deleted');
    } catch (error) {
      this.actions.report(this.el.error, error);
    }
  }

  /** Cancels a queued or running split: the server stops it, keeps no stems and refunds its credits. */
  async cancel(split) {
    try {
      const cancelled = await this.api.cancelSplit(split.id);
      this.update(cancelled);
      this.actions.announce(split.filename + ': cancelled');
      this.actions.refreshCredits();
    } catch (error) {
      this.actions.report(this.el.error, error);
    }
  }

  /** Redraws the row of a split the page is following, so the list shows the same progress as the job line. */
  update(split) {
    const row = this.el.list.querySelector('li[data-split="' + CSS.escape(split.id) + '"]');
    if (row) row.replaceWith(this.item(split));
  }

  /**
   * Opens a split of the list, asking for it afresh when its signed stem URLs (valid for the
   * server's stem-URL lifetime from when the list was loaded) may have expired meanwhile.
   */
  async openListed(split, listedAt) {
    const limits = serverLimits();
    const lifetimeMs = limits ? limits.stemUrlTtlSeconds * 1000 : 0;
    if (Date.now() - listedAt < lifetimeMs - 60_000) return this.actions.open(split);
    try {
      await this.actions.open(await this.api.split(split.id));
    } catch (error) {
      this.actions.report(this.el.error, error);
    }
  }
}

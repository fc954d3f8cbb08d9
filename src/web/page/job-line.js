// @ts-check
/**
 * Browser module `/web/job-line.js`: the line under the drop zone that shows the job the page is
 * following: its name, its stage in words (uploading, its place in the queue, splitting with its
 * step, device and time left) and a progress bar.
 */
import { show } from './dom.js';
import { spanWords } from './model-words.js';
import { queueWords } from './split-words.js';

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

export class JobLine {
  /** elements: {panel, name, stage, progress: the <progress> bar}. */
  constructor(elements) {
    this.el = elements;
    this.pace = new Pace();
  }

  /** Shows the line: the job's name, its stage and how far it is (percent; undefined: a stage with no measure). */
  set(name, stage, percent) {
    show(this.el.panel, true);
    this.el.name.textContent = name;
    this.el.stage.textContent = stage;
    const bar = /** @type {HTMLProgressElement} */ (this.el.progress);
    if (percent === undefined) bar.removeAttribute('value');
    else bar.value = percent;
  }

  hide() {
    show(this.el.panel, false);
  }

  /** A newly followed job: its time left is measured from what the page sees from now on. */
  restart() {
    this.pace = new Pace();
  }

  /** A queued split's place in the queue, or a running one's progress, chain step, device and time left. */
  progress(name, split) {
    if (split.status === 'queued') this.set(name, queueWords(split.queuePosition), 0);
    if (split.status === 'processing') {
      const left = this.pace.secondsLeft(split.progress, Date.now());
      const step = split.chain ? ' (step ' + split.chainStep + ' of ' + split.chain.length + ')' : '';
      this.set(
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
  }
}

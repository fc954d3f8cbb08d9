// @ts-check
/**
 * Browser module `/web/chain-view.js`: the recipe of a chain (the API's `chain`), built on the
 * library's choice. The ticked model (or ensemble) is step 1; each further step picks a stem an
 * earlier step makes and the model that splits it, e.g. vocals → a karaoke model → de-reverb on
 * the lead. Each step shows its model's terms and time; a later step's stems are `<input>-<stem>`.
 */
import { h } from './dom.js';

/**
 * @typedef {{input: string, model: string}} LaterStep
 * @typedef {{name: string, installed: boolean, allowed: boolean, sources: string[], terms: string}} ChainModel
 */

/** The most steps a chain has (the API's limit). */
const MAX_STEPS = 8;

export class ChainView {
  /**
   * elements: {steps: the list the later steps are drawn in, add: the "add a step" button, keep: the keep-intermediate box};
   * lookup(name) gives a listed model; words(model) its terms and time in words; onChange() runs when the recipe changes.
   */
  constructor(elements, lookup, words, onChange) {
    this.el = elements;
    this.lookup = lookup;
    this.words = words;
    this.onChange = onChange;
    /** @type {LaterStep[]} */
    this.later = [];
    /** @type {string[]} the runnable models a step can pick */
    this.runnable = [];
    /** @type {string[]} step 1's stems */
    this.firstStems = [];
    const self = this;
    elements.add.addEventListener('click', function () {
      const input = self.stemsBefore(self.later.length)[0];
      if (input === undefined || self.runnable.length === 0) return;
      self.later.push({ input: input, model: self.runnable[0] });
      self.draw();
      self.onChange();
    });
    elements.keep.addEventListener('change', function () {
      self.onChange();
    });
  }

  /** What step 1 makes (its models' stems) and which models a step can pick; redraws the later steps. */
  setFirst(/** @type {string[]} */ firstStems, /** @type {string[]} */ runnable) {
    this.firstStems = firstStems.map(function (stem) {
      return stem.toLowerCase();
    });
    this.runnable = runnable;
    this.later = this.later.filter((step) => runnable.includes(step.model));
    this.draw();
  }

  /** The stems the steps before step `index + 2` make, minus those already split. */
  stemsBefore(index) {
    let made = this.firstStems.slice();
    for (const step of this.later.slice(0, index)) {
      const model = this.lookup(step.model);
      made = made
        .filter(function (stem) {
          return stem !== step.input;
        })
        .concat(
          (model ? model.sources : []).map(function (stem) {
            return step.input + '-' + stem.toLowerCase();
          }),
        );
    }
    return made;
  }

  /** One row per later step: the stem it splits, the model, its terms and time, and a remove button. */
  draw() {
    const rows = this.later.map((step, index) => this.row(step, index));
    this.el.steps.replaceChildren.apply(this.el.steps, rows);
    this.el.add.disabled = this.firstStems.length === 0 || this.runnable.length === 0 || this.later.length + 1 >= MAX_STEPS;
    this.el.keep.closest('label').hidden = this.later.length === 0;
  }

  row(/** @type {LaterStep} */ step, /** @type {number} */ index) {
    const self = this;
    const stems = this.stemsBefore(index);
    if (!stems.includes(step.input)) step.input = stems[0] || '';
    const input = h(
      'select',
      { 'aria-label': 'Stem step ' + (index + 2) + ' splits' },
      stems.map(function (stem) {
        return h('option', { value: stem, selected: stem === step.input }, [stem]);
      }),
    );
    const model = h(
      'select',
      { 'aria-label': 'Model of step ' + (index + 2) },
      this.runnable.map(function (name) {
        return h('option', { value: name, selected: name === step.model }, [name]);
      }),
    );
    const change = function () {
      step.input = /** @type {HTMLSelectElement} */ (input).value;
      step.model = /** @type {HTMLSelectElement} */ (model).value;
      self.draw();
      self.onChange();
    };
    input.addEventListener('change', change);
    model.addEventListener('change', change);
    const remove = h('button', { type: 'button', class: 'quiet', 'aria-label': 'Remove step ' + (index + 2) }, ['Remove']);
    remove.addEventListener('click', function () {
      self.later.splice(index, 1);
      self.draw();
      self.onChange();
    });
    const listed = this.lookup(step.model);
    return h('li', { class: 'chain-step', 'data-step': String(index + 2) }, [
      h('span', { class: 'chain-step-head' }, ['Step ' + (index + 2) + ': split ', input, ' with ', model, ' ', remove]),
      h('span', { class: 'model-terms' }, [listed ? this.words(listed) : '']),
      h('span', { class: 'model-stems' }, [
        'Writes ' +
          (listed
            ? listed.sources
                .map(function (stem) {
                  return step.input + '-' + stem.toLowerCase();
                })
                .join(', ')
            : ''),
      ]),
    ]);
  }

  /** The later steps as the API's chain takes them (empty: no chain). */
  steps() {
    return this.later.map(function (step) {
      return { input: step.input, model: step.model };
    });
  }

  keepIntermediate() {
    return /** @type {HTMLInputElement} */ (this.el.keep).checked;
  }
}

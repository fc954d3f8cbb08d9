// @ts-check
/**
 * Browser module `/web/library-view.js`: what the next split runs and writes. A quick choice (4
 * stems, 6 stems, vocals + instrumental: the server's `4s`/`6s` aliases), or models of the
 * server's library (GET /v1/models) grouped by task: one, or several as an ensemble with its
 * algorithm and weights; each model's terms and how long the chosen songs would take on this
 * server (its measured seconds per minute of audio); and the stems' file format and bit depth.
 */
import { takesWeights } from '../../ensemble/algorithms.js';
import { headlineSdr } from '../../models/scores.js';
import { ChainView } from './chain-view.js';
import { h, show } from './dom.js';
import { choiceWords, estimateWords, sdrWords, TASK_NAMES, termsWords, timeWords } from './model-words.js';

/** The most models one ensemble runs (the API's limit). */
const MAX_MEMBERS = 8;
/** The quick choices: the alias each runs and the stem it keeps apart from the rest, if any. */
const QUICK = { '4s': { alias: '4s', twoStems: undefined }, '6s': { alias: '6s', twoStems: undefined }, '2s': { alias: '4s', twoStems: 'vocals' } };

/**
 * @typedef {{name: string, family: string, origin: string, installed: boolean, allowed: boolean, task: string,
 *   aliases: string[], sources: string[], description: string, terms: string, secondsPerMinute: number | null,
 *   scores: {sdr: Record<string, number>, source: string}[]}} ModelInfo
 * @typedef {{items: ModelInfo[], ensembleAlgorithms: string[], defaults: Record<string, string | null>}} ModelList
 * @typedef {{body: Record<string, unknown>, members: string[], problem: string | undefined}} Choice
 */

/** The formats the page offers that hold a bit depth (the others are lossy: the server refuses a depth for them). */
const LOSSLESS_FORMATS = ['wav', 'flac'];

export class LibraryView {
  /**
   * elements: {library, groups, empty, ensembleOptions, algorithm, weights, twoStems, bitDepthLabel, bitDepth, summary};
   * onChange() runs whenever the choice changes.
   */
  constructor(elements, onChange) {
    this.el = elements;
    this.onChange = onChange;
    /** @type {ModelList} */
    this.list = { items: [], ensembleAlgorithms: [], defaults: {} };
    /** @type {Map<string, ModelInfo>} */
    this.byName = new Map();
    /** Seconds of audio of the chosen songs; undefined before any is chosen or when the browser can't tell. */
    this.songSeconds = undefined;
    /** @type {string[]} the ticked library models, in the order ticked (the ensemble's member order). */
    this.ticked = [];
    /** Whether each task's models are ordered by published SDR, best first (else as the server lists them). */
    this.sortBySdr = false;
    const self = this;
    /** Step 1 is the ticked model or ensemble; the chain view holds the steps after it. */
    this.chain = new ChainView(
      { steps: elements.chainSteps, add: elements.chainAdd, keep: elements.chainKeep },
      function (name) {
        return self.byName.get(name);
      },
      function (model) {
        return 'Terms: ' + model.terms + '. ' + self.timeWords(model);
      },
      function () {
        self.changed();
      },
    );
    for (const radio of this.radios('model').concat(this.radios('format')))
      radio.addEventListener('change', function () {
        self.changed();
      });
    for (const control of [elements.algorithm, elements.twoStems, elements.bitDepth])
      control.addEventListener('change', function () {
        self.changed();
      });
  }

  /** @param {string} name */
  radios(name) {
    return /** @type {HTMLInputElement[]} */ (Array.from(document.querySelectorAll('input[name="' + name + '"]')));
  }

  /** @param {string} name */
  checked(name) {
    const radio = this.radios(name).find(function (input) {
      return input.checked;
    });
    return radio ? radio.value : '';
  }

  /** The server's models: grouped by task, with what each writes, its terms and its time. */
  load(/** @type {ModelList} */ list) {
    this.list = list;
    this.byName = new Map(
      list.items.map(function (model) {
        return [model.name, model];
      }),
    );
    this.ticked = this.ticked.filter((name) => this.runnable(this.byName.get(name)));
    const algorithm = this.el.algorithm.value;
    this.el.algorithm.replaceChildren.apply(
      this.el.algorithm,
      list.ensembleAlgorithms.map(function (name, index) {
        return h('option', { value: name }, [name + (index === 0 ? ' (default)' : '')]);
      }),
    );
    // Read again after a job: the user's algorithm stays chosen.
    if (list.ensembleAlgorithms.includes(algorithm)) this.el.algorithm.value = algorithm;
    const tasks = Object.keys(TASK_NAMES).concat(
      list.items.map(function (model) {
        return model.task;
      }),
    );
    const groups = [this.sortControl()].concat(
      Array.from(new Set(tasks))
        .map((task) => this.group(task))
        .filter(Boolean),
    );
    this.el.groups.replaceChildren.apply(this.el.groups, groups);
    show(this.el.empty, list.items.length === 0);
    this.changed();
  }

  /** The fieldset of one task's models, or null when the library has none; those it can't run folded away. */
  group(task) {
    const models = this.list.items.filter(function (model) {
      return model.task === task;
    });
    if (models.length === 0) return null;
    if (this.sortBySdr)
      models.sort(function (a, b) {
        return (headlineSdr(b.scores, b.task) ?? -Infinity) - (headlineSdr(a.scores, a.task) ?? -Infinity);
      });
    const runnable = models.filter((model) => this.runnable(model));
    const others = models.filter((model) => !this.runnable(model));
    const children = [h('legend', {}, [TASK_NAMES[task] || task])];
    if (runnable.length > 0)
      children.push(
        h(
          'ul',
          { class: 'model-rows' },
          runnable.map((model) => this.row(model)),
        ),
      );
    if (others.length > 0) {
      children.push(
        h('details', { class: 'more-models' }, [
          h('summary', {}, [others.length + (runnable.length > 0 ? ' more' : '') + ' not available on this server']),
          h(
            'ul',
            { class: 'model-rows' },
            others.map((model) => this.row(model)),
          ),
        ]),
      );
    }
    return h('fieldset', { class: 'task-group', 'data-task': task }, children);
  }

  /** "Order by published SDR": the publishers' per-stem figures (GET /v1/models' scores), best first in each task. */
  sortControl() {
    const self = this;
    const box = h('input', { type: 'checkbox', id: 'library-sort-sdr', checked: this.sortBySdr });
    box.addEventListener('change', function () {
      self.sortBySdr = box.checked;
      self.load(self.list);
    });
    return h('label', { class: 'library-sort' }, [box, ' Order each task by published SDR, best first (models without one last)']);
  }

  /** A model the server lists, by name (undefined when it lists none of that name). */
  model(name) {
    return this.byName.get(name);
  }

  runnable(model) {
    return Boolean(model && model.installed && model.allowed);
  }

  row(/** @type {ModelInfo} */ model) {
    const self = this;
    const box = h('input', {
      type: 'checkbox',
      name: 'library-model',
      value: model.name,
      disabled: !this.runnable(model),
      checked: this.ticked.includes(model.name),
    });
    box.addEventListener('change', function () {
      self.tick(model.name, box.checked);
    });
    const lines = [
      h('label', { class: 'model-pick' }, [box, h('strong', {}, [model.name]), h('span', { class: 'model-family' }, [model.family])]),
      h('span', { class: 'model-about' }, [model.description]),
      h('span', { class: 'model-stems' }, ['Writes ' + model.sources.join(', ')]),
      h('span', { class: 'model-terms' }, ['Terms: ' + model.terms]),
      ...model.scores.map(function (set) {
        return h('span', { class: 'model-scores' }, ['Published SDR: ' + sdrWords(set.sdr) + ' (' + set.source + ')']);
      }),
      h('span', { class: 'model-time' }, [this.timeWords(model)]),
    ];
    const why = this.unavailableWords(model);
    if (why) lines.push(h('span', { class: 'model-why' }, [why]));
    return h('li', { class: 'model-row' + (why ? ' is-unavailable' : ''), 'data-model': model.name }, lines);
  }

  /** Why a listed model can't be ticked, or undefined. */
  unavailableWords(model) {
    if (!model.installed) return 'Not installed on this server ("stemsplit models pull ' + model.name + '" there adds it).';
    if (!model.allowed) return "This server's operator doesn't let API keys run it (serve --models).";
    return undefined;
  }

  /** One model's time for the chosen songs, or per minute of audio before a song is chosen. */
  timeWords(/** @type {ModelInfo} */ model) {
    return timeWords(model, this.songSeconds);
  }

  tick(name, on) {
    this.ticked = this.ticked
      .filter(function (other) {
        return other !== name;
      })
      .concat(on ? [name] : []);
    this.changed();
  }

  /** Seconds of audio of the songs waiting to be split (undefined: none, or unknown). */
  setSongSeconds(seconds) {
    this.songSeconds = seconds;
    for (const row of Array.from(this.el.groups.querySelectorAll('li[data-model]'))) {
      const model = this.byName.get(row.getAttribute('data-model'));
      if (model) row.querySelector('.model-time').textContent = this.timeWords(model);
    }
    this.changed();
  }

  /** Redraws what depends on the choice (ensemble options, stems to keep, bit depth, the summary) and tells the page. */
  changed() {
    const library = this.checked('model') === 'library';
    show(this.el.library, library);
    const ensemble = library && this.ticked.length > 1;
    show(this.el.ensembleOptions, ensemble);
    if (ensemble) this.drawWeights();
    this.fillTwoStems(library ? this.ticked : []);
    this.drawChain(library);
    const format = this.checked('format');
    show(this.el.bitDepthLabel, LOSSLESS_FORMATS.includes(format));
    const float = /** @type {HTMLOptionElement} */ (this.el.bitDepth.querySelector('option[value="32"]'));
    float.disabled = format !== 'wav';
    if (float.disabled && this.el.bitDepth.value === '32') this.el.bitDepth.value = '';
    for (const box of /** @type {HTMLInputElement[]} */ (Array.from(this.el.groups.querySelectorAll('input[name="library-model"]')))) {
      box.disabled = !this.runnable(this.byName.get(box.value)) || (!box.checked && this.ticked.length >= MAX_MEMBERS);
    }
    this.el.summary.textContent = this.summaryWords(this.choice());
    this.onChange();
  }

  /** One weight field per member, kept while the members stay; only for the algorithms that weigh. */
  drawWeights() {
    const weighs = takesWeights(/** @type {any} */ (this.el.algorithm.value));
    const kept = new Map(
      Array.from(this.el.weights.querySelectorAll('input')).map(function (input) {
        return [input.getAttribute('data-member'), /** @type {HTMLInputElement} */ (input).value];
      }),
    );
    const self = this;
    const fields = weighs
      ? this.ticked.map(function (name) {
          const field = h('input', {
            type: 'number',
            min: '0',
            step: 'any',
            placeholder: '1',
            value: kept.get(name) || '',
            'data-member': name,
            'aria-label': 'Weight of ' + name,
          });
          field.addEventListener('input', function () {
            self.el.summary.textContent = self.summaryWords(self.choice());
            self.onChange();
          });
          return h('label', { class: 'weight' }, [name + ' \u00d7 ', field]);
        })
      : [h('span', { class: 'muted' }, [this.el.algorithm.value + ' takes no weights'])];
    this.el.weights.replaceChildren.apply(this.el.weights, fields);
  }

  /** The chain's steps after the ticked model(s): offered once one is ticked; two stems give way to it. */
  drawChain(library) {
    show(this.el.chain, library && this.ticked.length > 0);
    const stems = new Set();
    for (const name of library ? this.ticked : []) for (const source of (this.byName.get(name) || { sources: [] }).sources) stems.add(source);
    const runnable = this.list.items
      .filter((model) => this.runnable(model))
      .map(function (model) {
        return model.name;
      });
    this.chain.setFirst(Array.from(stems), runnable);
    show(this.el.twoStemsRow, this.chain.steps().length === 0);
  }

  /** The stems a two-stem split can keep apart: every stem the chosen models write (their complements aside). */
  fillTwoStems(names) {
    const select = this.el.twoStems;
    const previous = select.value;
    const stems = new Set();
    for (const name of names) {
      const model = this.byName.get(name);
      for (const source of model ? model.sources : []) if (!/^no_/i.test(source)) stems.add(source.toLowerCase());
    }
    const options = [h('option', { value: '' }, ['every stem the models write'])].concat(
      Array.from(stems).map(function (stem) {
        return h('option', { value: stem }, [stem + ' and no_' + stem + ' (everything else)']);
      }),
    );
    select.replaceChildren.apply(select, options);
    select.value = stems.has(previous) ? previous : '';
  }

  /** The models a quick choice runs now: the members of what its alias names (a model, or "A+B"). */
  aliasMembers(alias) {
    const named = this.list.defaults[alias];
    return named ? named.split('+') : [];
  }

  /** What to ask the server for: the request's additions, the models that will run, and what is missing, if anything. */
  choice() {
    const picked = this.checked('model') || '4s';
    /** @type {Record<string, unknown>} */
    const body = { outputFormat: this.checked('format') || 'mp3' };
    if (LOSSLESS_FORMATS.includes(String(body.outputFormat)) && this.el.bitDepth.value) body.bitDepth = Number(this.el.bitDepth.value);
    const quick = QUICK[picked];
    if (quick) {
      body.stemModel = quick.alias;
      if (quick.twoStems) body.twoStems = quick.twoStems;
      return { body: body, members: this.aliasMembers(quick.alias), problem: undefined };
    }
    const members = this.ticked.slice();
    if (this.el.twoStems.value) body.twoStems = this.el.twoStems.value;
    if (members.length === 0) return { body: body, members: members, problem: 'Tick a model of the library, or several for an ensemble.' };
    if (members.length === 1) {
      body.model = members[0];
      return this.chained(body, members);
    }
    body.models = members;
    body.ensemble = this.el.algorithm.value;
    const weights = Array.from(this.el.weights.querySelectorAll('input')).map(function (input) {
      return /** @type {HTMLInputElement} */ (input).value.trim();
    });
    if (weights.some(Boolean)) {
      const values = weights.map(function (value) {
        return value === '' ? 1 : Number(value);
      });
      if (
        values.some(function (value) {
          return !Number.isFinite(value) || value <= 0;
        })
      ) {
        return { body: body, members: members, problem: 'Each weight is a number above 0 (an empty one counts as 1).' };
      }
      body.ensembleWeights = values;
    }
    return this.chained(body, members);
  }

  /** The choice with the chain's later steps, if any: step 1 is what the library's choice names. */
  chained(/** @type {Record<string, unknown>} */ body, /** @type {string[]} */ members) {
    const later = this.chain.steps();
    if (later.length === 0) return { body: body, members: members, problem: undefined };
    /** @type {Record<string, unknown>} */
    const first = body.models ? { models: body.models, ensemble: body.ensemble } : { model: body.model };
    if (body.ensembleWeights) first.ensembleWeights = body.ensembleWeights;
    for (const field of ['model', 'models', 'ensemble', 'ensembleWeights', 'twoStems']) delete body[field];
    body.chain = [first].concat(later);
    if (this.chain.keepIntermediate()) body.keepIntermediate = true;
    return {
      body: body,
      members: members.concat(
        later.map(function (step) {
          return step.model;
        }),
      ),
      problem: undefined,
    };
  }

  /** The choice in one sentence: what runs, under which terms, for how long, into which files. */
  summaryWords(/** @type {Choice} */ choice) {
    return choiceWords(choice, this.byName, this.songSeconds);
  }

  /** `a and b: MIT; c: not stated`: the terms of each model, those under the same terms named together. */
  termsWords(/** @type {string[]} */ names) {
    return termsWords(names, this.byName);
  }

  /** How long the chosen songs will take with these models (names), in words. */
  estimateWords(/** @type {string[]} */ names) {
    return estimateWords(names, this.byName, this.songSeconds);
  }
}

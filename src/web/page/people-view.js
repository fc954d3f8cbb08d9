// @ts-check
/**
 * Browser module: the admin's People view (issue 48). Shown only to an admin's key (GET
 * /v1/accounts answers 403 to a member's, and the view stays hidden). Each person with their role,
 * time left and last use; grant time, revoke their keys; invite someone new, with time, and hand
 * over the invite link (a one-time link their browser exchanges for their own key).
 */
import { formatTime, h, show } from './dom.js';

/**
 * @typedef {{account: string, role: string, balance: number, activeKeys: number, lastUsedAt: string | null}} Person
 * @typedef {{
 *   people: () => Promise<{items: Person[]}>,
 *   keys: () => Promise<{items: {id: string, account: string, revokedAt: string | null}[]}>,
 *   revokeKey: (id: string) => Promise<unknown>,
 *   grant: (account: string, seconds: number) => Promise<unknown>,
 *   invite: (account: string, credits: number) => Promise<{url: string, account: string, expiresAt: string}>,
 * }} PeopleApi
 * @typedef {{panel: HTMLElement, list: HTMLElement, form: HTMLFormElement, name: HTMLInputElement, minutes: HTMLInputElement, link: HTMLInputElement, linkRow: HTMLElement, error: HTMLElement}} PeopleElements
 */

export class PeopleView {
  /**
   * @param {PeopleElements} elements
   * @param {PeopleApi} api
   * @param {(error: unknown) => string} explain
   */
  constructor(elements, api, explain) {
    this.elements = elements;
    this.api = api;
    this.explain = explain;
    const self = this;
    elements.form.addEventListener('submit', function (event) {
      event.preventDefault();
      self.invite();
    });
  }

  /** Shows the view when the key is an admin's (the people list answers), hides it otherwise. */
  async load() {
    let people;
    try {
      people = await this.api.people();
    } catch (ignored) {
      show(this.elements.panel, false);
      return;
    }
    show(this.elements.panel, true);
    const self = this;
    this.elements.list.replaceChildren.apply(
      this.elements.list,
      people.items.map(function (person) {
        return self.row(person);
      }),
    );
  }

  /** @param {Person} person */
  row(person) {
    const self = this;
    const used = person.lastUsedAt
      ? 'last used ' + new Date(person.lastUsedAt).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
      : 'never used';
    const minutes = /** @type {HTMLInputElement} */ (
      h('input', { type: 'number', min: '1', max: '100000', value: '60', 'aria-label': 'Minutes to give ' + person.account }, [])
    );
    const children = [
      h('div', { class: 'history-main' }, [
        h('span', { class: 'history-name' }, [person.account + (person.role === 'admin' ? ' (admin)' : '')]),
        h('span', { class: 'history-meta' }, [
          formatTime(person.balance) + ' of audio left \u00b7 ' + person.activeKeys + ' working key' + (person.activeKeys === 1 ? '' : 's') + ' \u00b7 ' + used,
        ]),
      ]),
      minutes,
      h(
        'button',
        {
          type: 'button',
          onclick: function () {
            self.grant(person.account, Number(minutes.value) * 60);
          },
        },
        ['Give minutes'],
      ),
    ];
    if (person.role !== 'admin' && person.activeKeys > 0) {
      children.push(
        h(
          'button',
          {
            type: 'button',
            'aria-label': 'Revoke the keys of ' + person.account,
            onclick: function () {
              self.revoke(person.account);
            },
          },
          ['Revoke'],
        ),
      );
    }
    return h('li', { class: 'history-item', 'data-account': person.account }, children);
  }

  /** @param {string} account @param {number} seconds */
  async grant(account, seconds) {
    await this.act(async () => {
      await this.api.grant(account, seconds);
    });
  }

  /** Revokes every working key of the account: their pages and stem links stop at once. */
  async revoke(account) {
    await this.act(async () => {
      const keys = await this.api.keys();
      for (const key of keys.items) if (key.account === account && key.revokedAt === null) await this.api.revokeKey(key.id);
    });
  }

  async invite() {
    const { name, minutes, link, linkRow } = this.elements;
    await this.act(async () => {
      const created = await this.api.invite(name.value.trim(), Math.max(0, Math.round(Number(minutes.value) * 60)));
      link.value = created.url;
      show(linkRow, true);
      name.value = '';
    });
  }

  /** @param {() => Promise<void>} action */
  async act(action) {
    this.elements.error.textContent = '';
    show(this.elements.error, false);
    try {
      await action();
      await this.load();
    } catch (error) {
      this.elements.error.textContent = this.explain(error);
      show(this.elements.error, true);
    }
  }
}

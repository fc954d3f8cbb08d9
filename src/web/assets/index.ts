/**
 * The page's assets, embedded as strings so the single-file executable carries them and the
 * page works offline: no CDN, no files read at run time.
 */
import { apiJs } from './api-js.js';
import { appJs } from './app-js.js';
import { domJs } from './dom-js.js';
import { iconSvg } from './icon-svg.js';
import { indexHtml } from './index-html.js';
import { mixerViewJs } from './mixer-view-js.js';
import { mixerJs } from './mixer-js.js';
import { stylesCss } from './styles-css.js';
import { waveformJs } from './waveform-js.js';
import { zipJs } from './zip-js.js';

export interface Asset {
  readonly contentType: string;
  readonly body: string;
}

const JS = 'text/javascript; charset=utf-8';

export const pageHtml: Asset = { contentType: 'text/html; charset=utf-8', body: indexHtml };

/** Served under /web/<name>; the browser modules import one another by these names. */
export const webAssets: Readonly<Record<string, Asset>> = Object.freeze({
  'app.js': { contentType: JS, body: appJs },
  'api.js': { contentType: JS, body: apiJs },
  'dom.js': { contentType: JS, body: domJs },
  'mixer.js': { contentType: JS, body: mixerJs },
  'mixer-view.js': { contentType: JS, body: mixerViewJs },
  'waveform.js': { contentType: JS, body: waveformJs },
  'zip.js': { contentType: JS, body: zipJs },
  'app.css': { contentType: 'text/css; charset=utf-8', body: stylesCss },
  'icon.svg': { contentType: 'image/svg+xml', body: iconSvg },
});

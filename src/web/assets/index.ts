/**
 * The page's assets, embedded so the single-file executable carries them and the page works
 * offline: no CDN, no files read at run time. Their sources are src/web/page/ (HTML, CSS and
 * type-checked browser modules); scripts/build-web.ts bundles them into page.gen.ts.
 */
import { pageFiles } from '../page.gen.js';

export interface Asset {
  readonly contentType: string;
  readonly body: string;
}

function file(name: string): string {
  const body = pageFiles[name];
  if (body === undefined) throw new Error(`the web page was built without ${name}: run npm run build`);
  return body;
}

export const pageHtml: Asset = { contentType: 'text/html; charset=utf-8', body: file('index.html') };

/** Served under /web/<name>. */
export const webAssets: Readonly<Record<string, Asset>> = Object.freeze({
  'app.js': { contentType: 'text/javascript; charset=utf-8', body: file('app.js') },
  'app.css': { contentType: 'text/css; charset=utf-8', body: file('app.css') },
  'icon.svg': { contentType: 'image/svg+xml', body: file('icon.svg') },
});

// @ts-check
/** Browser module `/web/dom.js`: element building, icons, and times and counts in words, shared by the views. */
/** h('button', {class: 'x', onclick: f, 'aria-label': 'y'}, ['text', child]) */
export function h(tag, props, children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else if (name === 'class') element.className = value;
    else if (name in element && typeof value !== 'string') element[name] = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children || []) element.append(child);
  return element;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
const ICON_PATHS = {
  play: 'M8 5v14l11-7z',
  pause: 'M6 5h4v14H6zM14 5h4v14h-4z',
  download: 'M12 4v10m0 0l-4-4m4 4l4-4M5 19h14',
};

export function icon(name) {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'icon icon-' + name);
  const path = document.createElementNS(SVG_NS, 'path');
  path.setAttribute('d', ICON_PATHS[name]);
  svg.append(path);
  return svg;
}

export function formatTime(seconds) {
  const whole = Math.max(0, Math.floor(seconds));
  const minutes = Math.floor(whole / 60);
  const rest = whole % 60;
  return minutes + ':' + (rest < 10 ? '0' : '') + rest;
}

export function spokenTime(seconds) {
  const whole = Math.max(0, Math.floor(seconds));
  const minutes = Math.floor(whole / 60);
  const rest = whole % 60;
  return (minutes ? minutes + (minutes === 1 ? ' minute ' : ' minutes ') : '') + rest + (rest === 1 ? ' second' : ' seconds');
}

/** `1 second`, `3 days`: a count of something in words. */
export function plural(n, word) {
  return n + ' ' + word + (n === 1 ? '' : 's');
}

/** "My Song.final.wav" → "My Song.final": names the downloads after the song. */
export function songBaseName(filename) {
  const dot = filename.lastIndexOf('.');
  const base = dot > 0 ? filename.slice(0, dot) : filename;
  return base.replace(/[\\/:*?"<>|]+/g, '_') || 'song';
}

export function show(element, visible) {
  element.hidden = !visible;
}

/** Shows a message in its element, or hides the element when there is none. */
export function setError(element, message) {
  element.textContent = message || '';
  show(element, Boolean(message));
}

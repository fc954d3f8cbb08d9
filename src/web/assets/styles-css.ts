/** `/web/app.css`: a dark studio look, one column on a phone, visible focus everywhere. */
export const stylesCss = String.raw`
:root {
  --bg: #0f1115;
  --panel: #181b22;
  --panel-2: #20242d;
  --line: #2c313c;
  --text: #e8eaf0;
  --muted: #9aa3b2;
  --accent: #7dd3fc;
  --accent-ink: #06202c;
  --danger: #fca5a5;
  --danger-bg: #3a1d22;
  --focus: #fde047;
  --radius: 10px;
  color-scheme: dark;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  font-size: 16px;
  line-height: 1.45;
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); }
[hidden] { display: none !important; }
h1, h2 { margin: 0 0 0.75rem; line-height: 1.2; }
h1 { font-size: 1.35rem; }
h2 { font-size: 1.15rem; }
p { margin: 0 0 0.75rem; }
code { background: var(--panel-2); padding: 0.1em 0.35em; border-radius: 4px; font-size: 0.92em; }
.muted { color: var(--muted); }

.visually-hidden {
  position: absolute !important; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
  clip: rect(0 0 0 0); white-space: nowrap; border: 0;
}
.skip-link { position: absolute; left: 0.5rem; top: -3rem; background: var(--focus); color: #000; padding: 0.5rem 0.75rem; border-radius: 6px; z-index: 10; }
.skip-link:focus { top: 0.5rem; }

:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
main:focus { outline: none; }

.top {
  display: flex; align-items: center; gap: 1rem; padding: 0.75rem clamp(1rem, 4vw, 2rem);
  border-bottom: 1px solid var(--line); background: var(--panel);
}
.brand { display: flex; align-items: center; gap: 0.5rem; margin: 0 auto 0 0; font-weight: 700; font-size: 1.15rem; letter-spacing: 0.02em; }
.credits { margin: 0; color: var(--muted); font-variant-numeric: tabular-nums; text-align: right; }

main { max-width: 68rem; margin: 0 auto; padding: clamp(0.75rem, 3vw, 1.5rem); display: grid; gap: 1rem; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); padding: clamp(1rem, 3vw, 1.5rem); }

button, .button {
  font: inherit; color: var(--text); background: var(--panel-2); border: 1px solid var(--line);
  border-radius: 8px; padding: 0.5rem 0.9rem; min-height: 2.5rem; cursor: pointer;
  display: inline-flex; align-items: center; justify-content: center; gap: 0.4rem; text-decoration: none;
}
button:hover:not(:disabled), .button:hover { border-color: var(--muted); }
button:disabled { opacity: 0.5; cursor: default; }
button.primary { background: var(--accent); color: var(--accent-ink); border-color: var(--accent); font-weight: 600; }
button.quiet { background: transparent; }
.icon { width: 1.25rem; height: 1.25rem; fill: currentColor; stroke: none; }
.icon-download { fill: none; stroke: currentColor; stroke-width: 2; stroke-linecap: round; stroke-linejoin: round; }

input[type="password"], input[type="text"] {
  font: inherit; color: var(--text); background: var(--bg); border: 1px solid var(--line); border-radius: 8px;
  padding: 0.5rem 0.75rem; min-height: 2.5rem; min-width: 0;
}
.key-form label { display: block; font-weight: 600; margin-bottom: 0.35rem; }
.key-row { display: flex; gap: 0.5rem; flex-wrap: wrap; }
.key-row input { flex: 1 1 18rem; }

.error { color: var(--danger); background: var(--danger-bg); border: 1px solid #6b2c35; border-radius: 8px; padding: 0.6rem 0.8rem; margin: 0.75rem 0 0; }

.models { border: 0; padding: 0; margin: 0 0 1rem; display: flex; gap: 0.75rem; flex-wrap: wrap; }
.models legend { font-weight: 600; margin-bottom: 0.5rem; padding: 0; }
.choice { flex: 1 1 14rem; display: flex; gap: 0.6rem; align-items: flex-start; background: var(--panel-2); border: 1px solid var(--line); border-radius: 8px; padding: 0.6rem 0.75rem; cursor: pointer; }
.choice:has(input:checked) { border-color: var(--accent); }
.choice input { margin-top: 0.3rem; accent-color: var(--accent); }
.choice strong { display: block; }
.choice span { color: var(--muted); }
.choice strong { color: var(--text); }

.drop-zone { position: relative; }
.file-input { position: absolute; inset: 0; width: 100%; height: 100%; opacity: 0; cursor: pointer; }
.drop-label {
  display: flex; flex-direction: column; align-items: center; gap: 0.35rem; text-align: center;
  border: 2px dashed var(--line); border-radius: var(--radius); padding: clamp(1.25rem, 5vw, 2.5rem) 1rem; color: var(--muted);
}
.drop-big { font-size: 1.2rem; font-weight: 600; color: var(--text); }
.fake-button { color: var(--accent); text-decoration: underline; }
.file-input:focus-visible + .drop-label { outline: 3px solid var(--focus); outline-offset: 2px; }
.drop-zone:hover .drop-label, .drop-zone.is-dragging .drop-label { border-color: var(--accent); background: rgba(125, 211, 252, 0.06); }
.for-touch { display: none; }
@media (pointer: coarse) {
  .for-mouse { display: none; }
  .for-touch { display: inline; }
}
.drop-zone.is-busy { opacity: 0.55; }
.drop-zone.is-busy .file-input { cursor: default; }

.job { margin-top: 1rem; }
.job-line { display: flex; justify-content: space-between; gap: 1rem; margin-bottom: 0.35rem; }
.job-name { font-weight: 600; overflow-wrap: anywhere; }
.job-stage { color: var(--muted); white-space: nowrap; font-variant-numeric: tabular-nums; }
progress { width: 100%; height: 0.6rem; accent-color: var(--accent); }

.mixer-head, .history-head { display: flex; align-items: center; justify-content: space-between; gap: 0.75rem; flex-wrap: wrap; margin-bottom: 0.75rem; }
.mixer-head h2, .history-head h2 { margin: 0; overflow-wrap: anywhere; }
.mixer-status { color: var(--muted); }
.transport { display: flex; align-items: center; gap: 0.75rem; margin-bottom: 1rem; }
.play { width: 3.25rem; height: 3.25rem; border-radius: 50%; padding: 0; background: var(--accent); color: var(--accent-ink); border: 0; flex: none; }
.play .icon { width: 1.6rem; height: 1.6rem; }
.time { font-variant-numeric: tabular-nums; color: var(--muted); min-width: 6.5rem; }
input[type="range"] { accent-color: var(--accent); min-width: 0; }
.seek { flex: 1; height: 1.75rem; }

.stems { list-style: none; margin: 0; padding: 0; display: grid; gap: 0.5rem; }
.stem {
  --stem-color: var(--accent);
  display: grid; align-items: center; gap: 0.75rem;
  grid-template-columns: 6.5rem auto 7rem minmax(0, 1fr) auto;
  grid-template-areas: "name buttons volume wave download";
  background: var(--panel-2); border: 1px solid var(--line); border-left: 4px solid var(--stem-color);
  border-radius: 8px; padding: 0.5rem 0.6rem;
}
.stem-name { grid-area: name; display: grid; gap: 0.3rem; font-weight: 600; text-transform: capitalize; }
.meter { display: block; height: 4px; background: var(--bg); border-radius: 2px; overflow: hidden; }
.meter-fill { display: block; height: 100%; background: var(--stem-color); transform: scaleX(0); transform-origin: left; }
.stem-buttons { grid-area: buttons; display: flex; gap: 0.35rem; }
.toggle { width: 2.5rem; padding: 0; font-weight: 700; }
.toggle.mute[aria-pressed="true"] { background: #b91c1c; border-color: #ef4444; color: #fff; }
.toggle.solo[aria-pressed="true"] { background: #ca8a04; border-color: #facc15; color: #111; }
.volume { grid-area: volume; width: 100%; }
.wave { grid-area: wave; position: relative; height: 3.5rem; cursor: pointer; touch-action: none; border-radius: 4px; background: rgba(0, 0, 0, 0.25); overflow: hidden; }
.wave-canvas { display: block; width: 100%; height: 100%; opacity: 0.9; }
.wave-played { position: absolute; inset: 0 auto 0 0; width: 0; background: rgba(255, 255, 255, 0.12); border-right: 2px solid var(--text); pointer-events: none; }
.download { grid-area: download; }
.stem.is-silent .wave-canvas { opacity: 0.25; }
.stem.is-silent .stem-name { color: var(--muted); }
.hint { color: var(--muted); font-size: 0.9rem; margin: 0.75rem 0 0; }

.history { list-style: none; margin: 0 0 0.75rem; padding: 0; display: grid; gap: 0.5rem; }
.history-item { display: flex; align-items: center; gap: 0.75rem; background: var(--panel-2); border: 1px solid var(--line); border-radius: 8px; padding: 0.6rem 0.75rem; }
.history-main { flex: 1; display: grid; min-width: 0; }
.history-name { font-weight: 600; overflow-wrap: anywhere; }
.history-meta, .history-why { color: var(--muted); font-size: 0.9rem; }
.history-why { color: var(--danger); }
.badge { font-size: 0.8rem; padding: 0.15rem 0.5rem; border-radius: 999px; border: 1px solid var(--line); white-space: nowrap; }
.badge-succeeded { color: #86efac; border-color: #166534; }
.badge-failed { color: var(--danger); border-color: #7f1d1d; }
.badge-processing, .badge-queued { color: var(--accent); border-color: #075985; }
.badge-expired { color: var(--muted); }

@media (max-width: 720px) {
  .stem {
    grid-template-columns: minmax(0, 1fr) auto auto;
    grid-template-areas: "name buttons download" "wave wave wave" "volume volume volume";
    gap: 0.5rem;
  }
  .download-label { display: none; }
  .download { width: 2.5rem; padding: 0; }
  .history-item { flex-wrap: wrap; }
  .history-main { flex-basis: 100%; }
  .transport { gap: 0.5rem; }
  .time { min-width: 0; font-size: 0.9rem; }
  .top { gap: 0.5rem; }
  .credits { font-size: 0.85rem; }
  #change-key { white-space: nowrap; padding: 0.4rem 0.6rem; }
}
@media (prefers-reduced-motion: reduce) {
  * { transition: none !important; }
}
`;

/** The page at `/`: static markup; /web/app.js fills it in. Every asset comes from this server. */
export const indexHtml = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="color-scheme" content="dark">
<title>stemsplit</title>
<link rel="icon" href="web/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="web/app.css">
<script type="module" src="web/app.js"></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to the page</a>
<header class="top">
  <p class="brand"><img src="web/icon.svg" alt="" width="28" height="28"> stemsplit</p>
  <p id="credits" class="credits" hidden></p>
  <button id="change-key" type="button" class="quiet" hidden>Change key</button>
</header>
<main id="main" tabindex="-1">
  <noscript><p class="error">This page needs JavaScript. The API itself is at <code>v1/</code>.</p></noscript>

  <section id="key-panel" class="panel" aria-labelledby="key-title" hidden>
    <h1 id="key-title">Connect with an API key</h1>
    <p>Open the link <code>stemsplit serve</code> printed when it started, or paste a key made with <code>stemsplit keys create</code>.</p>
    <form id="key-form" class="key-form">
      <label for="key-input">API key</label>
      <div class="key-row">
        <input id="key-input" type="password" autocomplete="off" spellcheck="false" placeholder="sk_stemsplit_&hellip;" required>
        <button type="submit" class="primary">Use this key</button>
        <button id="key-cancel" type="button" class="quiet" hidden>Keep the current key</button>
      </div>
    </form>
    <p id="key-error" class="error" role="alert" hidden></p>
  </section>

  <section id="upload-panel" class="panel" aria-labelledby="upload-title" hidden>
    <h1 id="upload-title">Split a song</h1>
    <fieldset class="models">
      <legend>Stems to make</legend>
      <label class="choice"><input type="radio" name="model" value="4s" checked><span><strong>4 stems</strong> vocals, drums, bass, other</span></label>
      <label class="choice"><input type="radio" name="model" value="6s"><span><strong>6 stems</strong> adds guitar and piano</span></label>
    </fieldset>
    <div id="drop-zone" class="drop-zone">
      <input id="file-input" class="file-input" type="file" accept="audio/*,.mp3,.wav,.flac,.m4a,.webm">
      <label for="file-input" class="drop-label">
        <span class="drop-big for-mouse">Drop a song here</span>
        <span class="for-mouse">or <span class="fake-button">choose a file</span></span>
        <span class="drop-big fake-button for-touch">Choose a song</span>
        <small>MP3, WAV, FLAC, M4A or WebM, up to 50 MB. One second of audio uses one credit.</small>
      </label>
    </div>
    <div id="job" class="job" hidden>
      <p class="job-line"><span id="job-name" class="job-name"></span> <span id="job-stage" class="job-stage"></span></p>
      <progress id="job-progress" max="100" aria-labelledby="job-name job-stage"></progress>
    </div>
    <p id="upload-error" class="error" role="alert" hidden></p>
  </section>

  <section id="mixer-panel" class="panel mixer" aria-labelledby="mixer-title" hidden>
    <div class="mixer-head">
      <h2 id="mixer-title"></h2>
      <button id="download-all" type="button" disabled>Download all (zip)</button>
    </div>
    <p id="mixer-status" class="mixer-status" hidden></p>
    <div class="transport">
      <button id="play" type="button" class="play" aria-label="Play" disabled></button>
      <span id="time" class="time">0:00 / 0:00</span>
      <input id="seek" class="seek" type="range" min="0" max="0" step="0.01" value="0" aria-label="Position in the song" disabled>
    </div>
    <ul id="stems" class="stems" aria-label="Stems"></ul>
    <p class="hint">Space plays and pauses. Click or drag on a waveform to move through the song. <strong>M</strong> mutes a stem, <strong>S</strong> solos it.</p>
  </section>

  <section id="history-panel" class="panel" aria-labelledby="history-title" hidden>
    <div class="history-head">
      <h2 id="history-title">Your splits</h2>
      <button id="history-refresh" type="button" class="quiet">Refresh</button>
    </div>
    <p id="history-empty" class="muted" hidden>No splits with this key yet.</p>
    <ul id="history" class="history"></ul>
    <p id="history-error" class="error" role="alert" hidden></p>
    <button id="history-more" type="button" hidden>Show older splits</button>
  </section>

  <p id="status" class="visually-hidden" role="status" aria-live="polite"></p>
</main>
</body>
</html>
`;

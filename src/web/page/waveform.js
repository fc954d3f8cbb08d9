// @ts-check
/**
 * Browser module `/web/waveform.js`: peaks from a decoded AudioBuffer, computed once, drawn to
 * a <canvas> at whatever size the layout gives it (so a phone and a laptop both look sharp).
 */
const PEAK_COLUMNS = 2048;

/** Min and max of the channel mix per column: Float32Array [min0, max0, min1, max1, …]. */
export function computePeaks(buffer) {
  const channels = [];
  for (let c = 0; c < buffer.numberOfChannels; c++) channels.push(buffer.getChannelData(c));
  const columns = Math.min(PEAK_COLUMNS, buffer.length);
  const peaks = new Float32Array(columns * 2);
  const scale = 1 / channels.length;
  for (let column = 0; column < columns; column++) {
    const start = Math.floor((column * buffer.length) / columns);
    const end = Math.floor(((column + 1) * buffer.length) / columns);
    let min = 0;
    let max = 0;
    for (let i = start; i < end; i++) {
      let sample = 0;
      for (const data of channels) sample += data[i];
      sample *= scale;
      if (sample < min) min = sample;
      if (sample > max) max = sample;
    }
    peaks[column * 2] = min;
    peaks[column * 2 + 1] = max;
  }
  return peaks;
}

/** The largest magnitude among the peaks. */
export function peakMagnitude(peaks) {
  let max = 0;
  for (let i = 0; i < peaks.length; i++) max = Math.max(max, Math.abs(peaks[i]));
  return max;
}

/**
 * Draws the peaks across the canvas's displayed width, at the device's pixel density. scale
 * maps the song's loudest stem to the full height, so quiet songs still show their shape while
 * the stems keep their relative levels.
 */
export function drawWaveform(canvas, peaks, color, scale) {
  const ratio = window.devicePixelRatio || 1;
  const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
  const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
  const g = canvas.getContext('2d');
  g.clearRect(0, 0, width, height);
  g.fillStyle = color;
  const columns = peaks.length / 2;
  const middle = height / 2;
  for (let x = 0; x < width; x++) {
    const from = Math.floor((x * columns) / width);
    const to = Math.max(from + 1, Math.floor(((x + 1) * columns) / width));
    let min = 0;
    let max = 0;
    for (let column = from; column < to && column < columns; column++) {
      if (peaks[column * 2] < min) min = peaks[column * 2];
      if (peaks[column * 2 + 1] > max) max = peaks[column * 2 + 1];
    }
    const top = middle - Math.min(1, max * scale) * middle;
    const bottom = middle - Math.max(-1, min * scale) * middle;
    g.fillRect(x, top, 1, Math.max(ratio, bottom - top));
  }
}

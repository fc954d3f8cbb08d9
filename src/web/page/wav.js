// @ts-check
/**
 * Browser module: an AudioBuffer-like set of channels as a WAV file (32-bit float, so an export
 * holds exactly what the mixer computed, nothing rounded to 16 bits).
 */

/**
 * @param {Float32Array[]} channels one array per channel, all the same length
 * @param {number} sampleRate
 * @returns {Blob}
 */
export function wavBlob(channels, sampleRate) {
  const frames = channels.length > 0 ? channels[0].length : 0;
  const count = channels.length;
  const dataBytes = frames * count * 4;
  const header = new DataView(new ArrayBuffer(58));
  const text = function (at, value) {
    for (let i = 0; i < value.length; i++) header.setUint8(at + i, value.charCodeAt(i));
  };
  text(0, 'RIFF');
  header.setUint32(4, 50 + dataBytes, true);
  text(8, 'WAVE');
  text(12, 'fmt ');
  header.setUint32(16, 18, true);
  header.setUint16(20, 3, true); // IEEE float
  header.setUint16(22, count, true);
  header.setUint32(24, sampleRate, true);
  header.setUint32(28, sampleRate * count * 4, true);
  header.setUint16(32, count * 4, true);
  header.setUint16(34, 32, true);
  header.setUint16(36, 0, true);
  text(38, 'fact');
  header.setUint32(42, 4, true);
  header.setUint32(46, frames, true);
  text(50, 'data');
  header.setUint32(54, dataBytes, true);
  const samples = new Float32Array(frames * count);
  for (let frame = 0; frame < frames; frame++) {
    for (let channel = 0; channel < count; channel++) samples[frame * count + channel] = channels[channel][frame];
  }
  return new Blob([header.buffer, samples.buffer], { type: 'audio/wav' });
}

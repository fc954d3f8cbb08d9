// @ts-check
/**
 * Browser module `/web/zip.js`: a store-only zip writer (no compression: MP3 does not shrink)
 * with CRC-32, so "download all" packs the stems the page already holds without a server round trip.
 */
const CRC_TABLE = (function () {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(bytes) {
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function dosDateTime(date) {
  const time = (date.getHours() << 11) | (date.getMinutes() << 5) | (date.getSeconds() >> 1);
  const day = ((date.getFullYear() - 1980) << 9) | ((date.getMonth() + 1) << 5) | date.getDate();
  return { time: time, day: day };
}

const UTF8_NAMES = 0x0800;

function header(size, fields) {
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  for (const field of fields) {
    if (field[0] === 2) view.setUint16(field[1], field[2], true);
    else view.setUint32(field[1], field[2], true);
  }
  return bytes;
}

/** files: [{name, bytes: Uint8Array}] → a Blob holding a zip archive of them, stored as they are. */
export function zipStore(files, date) {
  const stamp = dosDateTime(date || new Date());
  const encoder = new TextEncoder();
  const parts = [];
  const central = [];
  let offset = 0;
  for (const file of files) {
    const name = encoder.encode(file.name);
    const crc = crc32(file.bytes);
    const size = file.bytes.length;
    const local = header(30, [
      [4, 0, 0x04034b50],
      [2, 4, 20],
      [2, 6, UTF8_NAMES],
      [2, 8, 0],
      [2, 10, stamp.time],
      [2, 12, stamp.day],
      [4, 14, crc],
      [4, 18, size],
      [4, 22, size],
      [2, 26, name.length],
      [2, 28, 0],
    ]);
    parts.push(local, name, file.bytes);
    central.push(
      header(46, [
        [4, 0, 0x02014b50],
        [2, 4, 20],
        [2, 6, 20],
        [2, 8, UTF8_NAMES],
        [2, 10, 0],
        [2, 12, stamp.time],
        [2, 14, stamp.day],
        [4, 16, crc],
        [4, 20, size],
        [4, 24, size],
        [2, 28, name.length],
        [2, 30, 0],
        [2, 32, 0],
        [2, 34, 0],
        [2, 36, 0],
        [4, 38, 0],
        [4, 42, offset],
      ]),
      name,
    );
    offset += local.length + name.length + size;
  }
  const centralSize = central.reduce(function (sum, part) {
    return sum + part.length;
  }, 0);
  const end = header(22, [
    [4, 0, 0x06054b50],
    [2, 4, 0],
    [2, 6, 0],
    [2, 8, files.length],
    [2, 10, files.length],
    [4, 12, centralSize],
    [4, 16, offset],
    [2, 20, 0],
  ]);
  return new Blob(parts.concat(central, [end]), { type: 'application/zip' });
}

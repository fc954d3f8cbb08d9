/**
 * A reader for the zip archives PyTorch writes (`torch.save`): stored (method 0) entries,
 * deflate (method 8) through node:zlib, and the zip64 records PyTorch always emits.
 * It reads the central directory once and then each entry on demand from the file,
 * so a large checkpoint is never held in memory whole.
 */
import { closeSync, readSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import { StemsplitError } from '../errors.js';
import { openModelFile } from '../model-files/regular.js';

export interface ZipEntry {
  readonly name: string;
  readonly method: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly localHeaderOffset: number;
}

const EOCD_SIGNATURE = 0x06054b50;
const ZIP64_LOCATOR_SIGNATURE = 0x07064b50;
const ZIP64_EOCD_SIGNATURE = 0x06064b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
const ZIP64_EXTRA_ID = 0x0001;
const MAX_EOCD_SEARCH = 22 + 0xffff;
const CENTRAL_HEADER = 46;
const LOCAL_HEADER = 30;
/**
 * Deflated entries may inflate at most this many times their compressed size once they are
 * larger than SMALL_ENTRY: torch stores its weights uncompressed, and float weights deflate to
 * about 90 %, so only a zip bomb claims more.
 */
const MAX_INFLATION = 100;
const SMALL_ENTRY = 64 * 2 ** 20;
/** Buffer's own ceiling: a claimed size above it is refused before any allocation. */
const MAX_ENTRY_BYTES = 2 ** 32 - 1;

export class ZipArchive {
  readonly entries: ReadonlyMap<string, ZipEntry>;
  private readonly fd: number;
  private readonly path: string;

  private constructor(path: string, fd: number, entries: Map<string, ZipEntry>) {
    this.path = path;
    this.fd = fd;
    this.entries = entries;
  }

  static open(path: string): ZipArchive {
    const { fd, size } = openModelFile(
      path,
      'checkpoint',
      (error) => new StemsplitError('MODEL_NOT_FOUND', `cannot open checkpoint ${path}`, { cause: error }),
    );
    try {
      return new ZipArchive(path, fd, readCentralDirectory(path, fd, size));
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /**
   * The uncompressed bytes of one entry, refused when they would be more than `maxBytes` (what
   * the caller's format allows) or than the entry's declared size.
   */
  read(name: string, maxBytes = MAX_ENTRY_BYTES): Buffer {
    const entry = this.entries.get(name);
    if (entry === undefined) throw invalid(this.path, `missing entry ${name}`);
    if (entry.size > maxBytes) throw invalid(this.path, `entry ${name} claims ${entry.size} bytes, more than the ${maxBytes} it may hold`);
    const header = readAt(this.path, this.fd, entry.localHeaderOffset, LOCAL_HEADER);
    if (header.readUInt32LE(0) !== LOCAL_SIGNATURE) throw invalid(this.path, `bad local header for ${name}`);
    const dataStart = entry.localHeaderOffset + LOCAL_HEADER + header.readUInt16LE(26) + header.readUInt16LE(28);
    const raw = readAt(this.path, this.fd, dataStart, entry.compressedSize);
    if (entry.method === 0) return raw;
    if (entry.method === 8) return inflateBounded(this.path, name, raw, entry.size);
    throw invalid(this.path, `entry ${name} uses unsupported compression method ${entry.method}`);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Inflates exactly `size` bytes: zlib stops at that many, and a stream of any other length is refused. */
function inflateBounded(path: string, name: string, raw: Buffer, size: number): Buffer {
  let out: Buffer;
  try {
    out = inflateRawSync(raw, { maxOutputLength: Math.max(1, size) });
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE'
        ? `inflates to more than the ${size} bytes it declares`
        : 'is not a valid deflate stream';
    throw invalid(path, `entry ${name} ${reason}`);
  }
  if (out.length !== size) throw invalid(path, `entry ${name} inflates to ${out.length} bytes, not the ${size} it declares`);
  return out;
}

function invalid(path: string, detail: string): StemsplitError {
  return new StemsplitError('MODEL_INVALID', `checkpoint ${path} is not a valid zip archive: ${detail}`);
}

/** `length` bytes at `position`, which the callers have checked lie inside the file. */
function readAt(path: string, fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buffer, done, Math.min(length - done, 2 ** 30), position + done);
    if (n === 0) throw invalid(path, 'the file ends early (was it cut off while downloading?)');
    done += n;
  }
  return buffer;
}

interface DirectoryLocation {
  readonly count: number;
  readonly offset: number;
  readonly size: number;
}

function readCentralDirectory(path: string, fd: number, fileSize: number): Map<string, ZipEntry> {
  const location = locateDirectory(path, fd, fileSize);
  if (location.offset + location.size > fileSize) throw invalid(path, 'the central directory lies past the end of the file (cut off while downloading?)');
  if (location.count * CENTRAL_HEADER > location.size) throw invalid(path, `the central directory claims ${location.count} entries in ${location.size} bytes`);
  const directory = readAt(path, fd, location.offset, location.size);
  const entries = new Map<string, ZipEntry>();
  let at = 0;
  for (let i = 0; i < location.count; i++) {
    if (at + CENTRAL_HEADER > directory.length || directory.readUInt32LE(at) !== CENTRAL_SIGNATURE) throw invalid(path, 'bad central directory entry');
    const nameLength = directory.readUInt16LE(at + 28);
    const extraLength = directory.readUInt16LE(at + 30);
    const commentLength = directory.readUInt16LE(at + 32);
    const next = at + CENTRAL_HEADER + nameLength + extraLength + commentLength;
    if (next > directory.length) throw invalid(path, 'a central directory entry runs past the directory');
    const name = directory.toString('utf8', at + CENTRAL_HEADER, at + CENTRAL_HEADER + nameLength);
    const extra = directory.subarray(at + CENTRAL_HEADER + nameLength, at + CENTRAL_HEADER + nameLength + extraLength);
    const sizes = applyZip64Extra(extra, {
      size: directory.readUInt32LE(at + 24),
      compressedSize: directory.readUInt32LE(at + 20),
      localHeaderOffset: directory.readUInt32LE(at + 42),
    });
    const entry = { name, method: directory.readUInt16LE(at + 10), ...sizes };
    checkEntry(path, entry, location.offset);
    entries.set(name, entry);
    at = next;
  }
  return entries;
}

/** An entry's claims against the file: its data lies before the directory, its size is one it could have. */
function checkEntry(path: string, entry: ZipEntry, directoryOffset: number): void {
  const { name, size, compressedSize, localHeaderOffset } = entry;
  if (localHeaderOffset + LOCAL_HEADER + compressedSize > directoryOffset) {
    throw invalid(path, `entry ${name} claims ${compressedSize} bytes at offset ${localHeaderOffset}, past the end of its data (cut off while downloading?)`);
  }
  if (size > MAX_ENTRY_BYTES) throw invalid(path, `entry ${name} claims ${size} bytes, more than any checkpoint entry holds`);
  if (entry.method === 0 && size !== compressedSize) throw invalid(path, `stored entry ${name} claims ${size} bytes but holds ${compressedSize}`);
  if (entry.method === 8 && size > SMALL_ENTRY && size > MAX_INFLATION * compressedSize) {
    throw invalid(path, `entry ${name} claims to inflate ${compressedSize} bytes to ${size}, as only a zip bomb does`);
  }
}

function locateDirectory(path: string, fd: number, fileSize: number): DirectoryLocation {
  if (fileSize < 22) throw invalid(path, `the file is only ${fileSize} bytes`);
  const tailLength = Math.min(fileSize, MAX_EOCD_SEARCH);
  const tailStart = fileSize - tailLength;
  const tail = readAt(path, fd, tailStart, tailLength);
  let eocd = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD_SIGNATURE) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw invalid(path, 'no end of central directory record');
  const count = tail.readUInt16LE(eocd + 10);
  const size = tail.readUInt32LE(eocd + 12);
  const offset = tail.readUInt32LE(eocd + 16);
  const locator = eocd - 20;
  if (locator >= 0 && tail.readUInt32LE(locator) === ZIP64_LOCATOR_SIGNATURE) {
    const recordOffset = Number(tail.readBigUInt64LE(locator + 8));
    if (recordOffset + 56 > fileSize) throw invalid(path, 'the zip64 end record lies past the end of the file');
    const record = readAt(path, fd, recordOffset, 56);
    if (record.readUInt32LE(0) !== ZIP64_EOCD_SIGNATURE) throw invalid(path, 'bad zip64 end record');
    return {
      count: Number(record.readBigUInt64LE(32)),
      size: Number(record.readBigUInt64LE(40)),
      offset: Number(record.readBigUInt64LE(48)),
    };
  }
  return { count, size, offset };
}

interface EntrySizes {
  size: number;
  compressedSize: number;
  localHeaderOffset: number;
}

/** Zip64 stores a field as 0xFFFFFFFF and its real value in extra field 0x0001, in this order. */
function applyZip64Extra(extra: Buffer, sizes: EntrySizes): EntrySizes {
  const result = { ...sizes };
  let at = 0;
  while (at + 4 <= extra.length) {
    const id = extra.readUInt16LE(at);
    const length = extra.readUInt16LE(at + 2);
    if (id === ZIP64_EXTRA_ID) {
      let field = at + 4;
      for (const key of ['size', 'compressedSize', 'localHeaderOffset'] as const) {
        if (result[key] === 0xffffffff && field + 8 <= at + 4 + length) {
          result[key] = Number(extra.readBigUInt64LE(field));
          field += 8;
        }
      }
    }
    at += 4 + length;
  }
  return result;
}

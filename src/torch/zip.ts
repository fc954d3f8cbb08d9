/**
 * A reader for the zip archives PyTorch writes (`torch.save`): stored (method 0) entries,
 * deflate (method 8) through node:zlib, and the zip64 records PyTorch always emits.
 * It reads the central directory once and then each entry on demand from the file,
 * so a large checkpoint is never held in memory whole.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import { StemsplitError } from '../errors.js';

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
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (error) {
      throw new StemsplitError('MODEL_NOT_FOUND', `cannot open checkpoint ${path}`, { cause: error });
    }
    try {
      return new ZipArchive(path, fd, readCentralDirectory(path, fd));
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /** The uncompressed bytes of one entry. */
  read(name: string): Buffer {
    const entry = this.entries.get(name);
    if (entry === undefined) throw invalid(this.path, `missing entry ${name}`);
    const header = readAt(this.fd, entry.localHeaderOffset, 30);
    if (header.readUInt32LE(0) !== LOCAL_SIGNATURE) throw invalid(this.path, `bad local header for ${name}`);
    const dataStart = entry.localHeaderOffset + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
    const raw = readAt(this.fd, dataStart, entry.compressedSize);
    if (entry.method === 0) return raw;
    if (entry.method === 8) return inflateRawSync(raw);
    throw invalid(this.path, `entry ${name} uses unsupported compression method ${entry.method}`);
  }

  close(): void {
    closeSync(this.fd);
  }
}

function invalid(path: string, detail: string): StemsplitError {
  return new StemsplitError('MODEL_INVALID', `checkpoint ${path} is not a valid zip archive: ${detail}`);
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buffer, done, length - done, position + done);
    if (n === 0) throw new StemsplitError('MODEL_INVALID', 'unexpected end of checkpoint file');
    done += n;
  }
  return buffer;
}

interface DirectoryLocation {
  readonly count: number;
  readonly offset: number;
  readonly size: number;
}

function readCentralDirectory(path: string, fd: number): Map<string, ZipEntry> {
  const fileSize = fstatSync(fd).size;
  const location = locateDirectory(path, fd, fileSize);
  const directory = readAt(fd, location.offset, location.size);
  const entries = new Map<string, ZipEntry>();
  let at = 0;
  for (let i = 0; i < location.count; i++) {
    if (directory.readUInt32LE(at) !== CENTRAL_SIGNATURE) throw invalid(path, 'bad central directory entry');
    const nameLength = directory.readUInt16LE(at + 28);
    const extraLength = directory.readUInt16LE(at + 30);
    const commentLength = directory.readUInt16LE(at + 32);
    const name = directory.toString('utf8', at + 46, at + 46 + nameLength);
    const extra = directory.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength);
    const sizes = applyZip64Extra(extra, {
      size: directory.readUInt32LE(at + 24),
      compressedSize: directory.readUInt32LE(at + 20),
      localHeaderOffset: directory.readUInt32LE(at + 42),
    });
    entries.set(name, { name, method: directory.readUInt16LE(at + 10), ...sizes });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

function locateDirectory(path: string, fd: number, fileSize: number): DirectoryLocation {
  const tailLength = Math.min(fileSize, MAX_EOCD_SEARCH);
  const tailStart = fileSize - tailLength;
  const tail = readAt(fd, tailStart, tailLength);
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
    const record = readAt(fd, Number(tail.readBigUInt64LE(locator + 8)), 56);
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

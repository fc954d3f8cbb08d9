/** The HTTP names the API hands out: paths of uploads and stems, and the upload token header. */
import { stemExtension, type StemFormat } from '../audio/formats.js';

export const UPLOAD_TOKEN_HEADER = 'X-Stemsplit-Upload-Token';

/** Where a reserved upload's bytes go, and how a finished upload is named again (`fileUrl`). */
export function uploadPath(uploadId: string): string {
  return `/v1/uploads/${uploadId}`;
}

/** The `storageKey` of an uploaded_file input. */
export function storageKeyOf(uploadId: string): string {
  return `uploads/${uploadId}`;
}

/** A stem's download path: it ends in the format's file extension (an ALAC stem's in .m4a). */
export function stemPath(splitId: string, stem: string, format: StemFormat): string {
  return `/v1/files/${encodeURIComponent(splitId)}/${encodeURIComponent(stem)}.${stemExtension(format)}`;
}

export function sourcePath(splitId: string): string {
  return `/v1/files/${encodeURIComponent(splitId)}/source`;
}

// Photos before they leave the phone: scaled to at most 2048 px on the long side and written as
// JPEG, so a 3 MB camera photo costs every member a few hundred KB (and its location and camera
// metadata are gone before the server strips them again). What the browser cannot decode (HEIC
// outside Safari, a PDF) goes as it is. `scaledSize` is pure, for Node's test runner.

export const LONG_SIDE = 2048;
const QUALITY = 0.85;

/** The size a width×height picture is drawn at so its long side is at most `max`. */
export function scaledSize(width, height, max = LONG_SIDE) {
  const long = Math.max(width, height);
  if (long <= max) return { width, height };
  const scale = max / long;
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/**
 * The photo to upload for `file`: a JPEG of at most LONG_SIDE px when the file is a picture the
 * browser can draw and that is bigger than that or over 1 MB; else the file itself. Never
 * larger than the file it replaces.
 */
export async function shrinkPhoto(file) {
  if (!file.type.startsWith("image/") || typeof createImageBitmap !== "function") return file;
  let bitmap;
  try {
    bitmap = await createImageBitmap(file, { imageOrientation: "from-image" });
  } catch {
    return file; // not a picture this browser decodes
  }
  const size = scaledSize(bitmap.width, bitmap.height);
  if (size.width === bitmap.width && file.size <= 1024 * 1024) {
    bitmap.close();
    return file;
  }
  const canvas = document.createElement("canvas");
  canvas.width = size.width;
  canvas.height = size.height;
  const context = canvas.getContext("2d");
  context.fillStyle = "#ffffff"; // JPEG has no transparency: a PNG's clear parts become white, not black
  context.fillRect(0, 0, size.width, size.height);
  context.drawImage(bitmap, 0, 0, size.width, size.height);
  bitmap.close();
  const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", QUALITY));
  return blob && blob.size < file.size ? blob : file;
}

// The photo's scaling before upload (web/js/photo.js); the drawing itself runs in the browser
// tests, which upload a 3000 px picture and find a 2048 px JPEG on the alert.
import assert from "node:assert/strict";
import { test } from "node:test";
import { load } from "./load.mjs";

const photo = await load("photo.js");

test("a photo's long side is brought to 2048 px, its shape kept; a small one is left alone", () => {
  assert.deepEqual(photo.scaledSize(4032, 3024), { width: 2048, height: 1536 });
  assert.deepEqual(photo.scaledSize(3024, 4032), { width: 1536, height: 2048 });
  assert.deepEqual(photo.scaledSize(3000, 2000), { width: 2048, height: 1365 });
  assert.deepEqual(photo.scaledSize(1200, 900), { width: 1200, height: 900 });
  assert.deepEqual(photo.scaledSize(100000, 10), { width: 2048, height: 1 }, "a sliver keeps a pixel");
});

// The map's arithmetic (web/js/map.js): Web Mercator both ways, the tiles a view needs, where a
// place falls in it, and the view that fits a trail. Loaded as the browser loads it (see
// load.mjs); the drawing half of the module touches the DOM only when called.
import assert from "node:assert/strict";
import { test } from "node:test";
import { load } from "./load.mjs";

const map = await load("map.js");

const near = (actual, expected, within, message) => assert.ok(Math.abs(actual - expected) <= within, `${message}: ${actual} is not ${expected}`);

test("places project to the slippy-map tiles every tile server names", () => {
  // OpenStreetMap's own examples: London's centre is tile 10/511/340; the world's middle is the corner of four tiles.
  const london = map.project(51.5074, -0.1278, 10);
  assert.deepEqual([Math.floor(london.x / 256), Math.floor(london.y / 256)], [511, 340]);
  assert.deepEqual(map.project(0, 0, 0), { x: 128, y: 128 });
  assert.deepEqual(map.project(0, 0, 1), { x: 256, y: 256 });
  // The poles are cut where the square world ends, not sent to infinity.
  assert.ok(Number.isFinite(map.project(90, 0, 3).y) && map.project(90, 0, 3).y <= 0.001);
  for (const [lat, lon] of [[55.6761, 12.5683], [-33.8688, 151.2093], [64.1466, -21.9426], [0, -179.999]]) {
    const point = map.project(lat, lon, 17);
    const back = map.unproject(point.x, point.y, 17);
    near(back.lat, lat, 1e-9, "latitude back");
    near(back.lon, lon, 1e-9, "longitude back");
  }
});

test("a view asks for exactly the tiles it shows, wrapping east and west, none past the poles", () => {
  const whole = map.tilesFor({ lat: 0, lon: 0 }, 1, 512, 512);
  assert.deepEqual(whole.map((tile) => [tile.z, tile.x, tile.y, tile.left, tile.top]),
    [[1, 0, 0, 0, 0], [1, 1, 0, 256, 0], [1, 0, 1, 0, 256], [1, 1, 1, 256, 256]]);
  // Across the antimeridian: the columns east of the last are the first again.
  const across = map.tilesFor({ lat: 0, lon: 179.9 }, 2, 300, 100);
  assert.deepEqual([...new Set(across.map((tile) => tile.x))], [3, 0]);
  assert.ok(across.every((tile) => tile.y === 1 || tile.y === 2));
  // Near the pole only the rows that exist.
  assert.ok(map.tilesFor({ lat: 89, lon: 0 }, 2, 256, 256).every((tile) => tile.y === 0));
  // A fractional zoom scales the nearest whole zoom's tiles; they still cover the view without gaps.
  const scaled = map.tilesFor({ lat: 55.6761, lon: 12.5683 }, 15.4, 360, 220);
  assert.ok(scaled.every((tile) => tile.z === 15));
  near(scaled[0].size, 256 * 2 ** 0.4, 1e-9, "the scaled tile's size");
  const right = Math.max(...scaled.map((tile) => tile.left + tile.size));
  const bottom = Math.max(...scaled.map((tile) => tile.top + tile.size));
  assert.ok(Math.min(...scaled.map((tile) => tile.left)) <= 0 && Math.min(...scaled.map((tile) => tile.top)) <= 0 && right >= 360 && bottom >= 220);
});

test("the centre is drawn in the middle of the view and the trail fits inside it", () => {
  const center = { lat: 55.6761, lon: 12.5683 };
  assert.deepEqual(map.toView(center, center, 16, 360, 220), { x: 180, y: 110 });
  const east = map.toView({ lat: 55.6761, lon: 12.5693 }, center, 16, 360, 220);
  assert.ok(east.x > 180 && Math.abs(east.y - 110) < 1e-6, "east is to the right");
  const trail = [{ lat: 55.670, lon: 12.560 }, { lat: 55.672, lon: 12.562 }, { lat: 55.6761, lon: 12.5683 }];
  const view = map.fit(trail, 360, 220);
  assert.ok(view.zoom >= 14 && view.zoom <= 17, `zoom ${view.zoom}`);
  for (const place of trail) {
    const at = map.toView(place, view.center, view.zoom, 360, 220);
    assert.ok(at.x >= 24 && at.x <= 336 && at.y >= 24 && at.y <= 196, `inside the padding: ${JSON.stringify(at)}`);
  }
  // One place: the closest zoom asked for; none: the whole world.
  assert.equal(map.fit([center], 360, 220).zoom, 17);
  assert.equal(map.fit([], 360, 220).zoom, map.MIN_ZOOM);
  // A metre in pixels, for the accuracy circle: 156 km a pixel at zoom 0 on the equator, less further north.
  near(map.metresPerPixel(0, 0), 156543.03, 0.01, "metres per pixel");
  near(map.metresPerPixel(60, 10), 156543.03 / 1024 / 2, 0.01, "at 60° north");
});

test("a tile's address fills the template, and a place reads as text", () => {
  assert.equal(map.tileURL("https://tile.example.org/{z}/{x}/{y}.png?key=1", { z: 15, x: 17528, y: 10240 }),
    "https://tile.example.org/15/17528/10240.png?key=1");
  assert.equal(map.placeText({ lat: 55.676098, lon: 12.568337 }), "55.67610, 12.56834");
});


// A small map written here: square tiles in Web Mercator from the server's tile template
// (ROOST_MAP_TILE_URL, given to the page in a <meta>), panned by dragging or the arrow keys,
// zoomed by pinching, the wheel, +/- or its two buttons, with markers, an accuracy circle and
// a trail drawn over it in SVG. Under every map the place is written out with a link, so a
// map whose tiles do not load (or no map at all) still says where. The arithmetic at the top
// is pure and has no DOM, so Node's test runner loads it on its own (Tests/web/map.test.mjs).

export const TILE = 256;
export const MIN_ZOOM = 2;
export const MAX_ZOOM = 19;
const MAX_LAT = 85.0511287798; // where Web Mercator's square world ends

const clamp = (value, low, high) => Math.min(high, Math.max(low, value));

/** A place's position in the world at `zoom`, in pixels from the top left (Web Mercator). */
export function project(lat, lon, zoom) {
  const size = TILE * 2 ** zoom;
  const sin = Math.sin((clamp(lat, -MAX_LAT, MAX_LAT) * Math.PI) / 180);
  return { x: ((lon + 180) / 360) * size, y: (0.5 - Math.log((1 + sin) / (1 - sin)) / (4 * Math.PI)) * size };
}

/** The place at world pixel (x, y) at `zoom`: project's inverse. */
export function unproject(x, y, zoom) {
  const size = TILE * 2 ** zoom;
  const n = Math.PI - (2 * Math.PI * y) / size;
  return { lat: (180 / Math.PI) * Math.atan(Math.sinh(n)), lon: (x / size) * 360 - 180 };
}

/**
 * The tiles that cover a `width`×`height` view centred on `center` at `zoom` (which may be
 * fractional: tiles of the nearest whole zoom, scaled). Each is {z, x, y, left, top, size} in
 * the view's pixels; x wraps around the world, rows beyond the poles are left out.
 */
export function tilesFor(center, zoom, width, height) {
  const z = clamp(Math.round(zoom), 0, MAX_ZOOM);
  const scale = 2 ** (zoom - z);
  const size = TILE * scale;
  const middle = project(center.lat, center.lon, z);
  const left = middle.x * scale - width / 2;
  const top = middle.y * scale - height / 2;
  const count = 2 ** z;
  const tiles = [];
  for (let row = Math.floor(top / size); row * size < top + height; row += 1) {
    if (row < 0 || row >= count) continue;
    for (let column = Math.floor(left / size); column * size < left + width; column += 1) {
      tiles.push({ z, x: ((column % count) + count) % count, y: row, left: column * size - left, top: row * size - top, size });
    }
  }
  return tiles;
}

/** Where a place falls in the view ({x, y} pixels from the view's top left). */
export function toView(place, center, zoom, width, height) {
  const point = project(place.lat, place.lon, zoom);
  const middle = project(center.lat, center.lon, zoom);
  return { x: point.x - middle.x + width / 2, y: point.y - middle.y + height / 2 };
}

/** Metres one view pixel spans at `lat` and `zoom`. */
export function metresPerPixel(lat, zoom) {
  return (40075016.686 * Math.cos((lat * Math.PI) / 180)) / (TILE * 2 ** zoom);
}

/**
 * The view that shows every place: its centre and the highest whole zoom (at most `max`) at
 * which all fit inside `width`×`height` less `padding` on each side. One place: `max`.
 */
export function fit(places, width, height, { max = 17, padding = 24 } = {}) {
  if (!places.length) return { center: { lat: 0, lon: 0 }, zoom: MIN_ZOOM };
  const lats = places.map((place) => place.lat);
  const lons = places.map((place) => place.lon);
  const corner = (zoom) => [project(Math.max(...lats), Math.min(...lons), zoom), project(Math.min(...lats), Math.max(...lons), zoom)];
  let zoom = max;
  while (zoom > MIN_ZOOM) {
    const [northWest, southEast] = corner(zoom);
    if (southEast.x - northWest.x <= width - 2 * padding && southEast.y - northWest.y <= height - 2 * padding) break;
    zoom -= 1;
  }
  const [northWest, southEast] = corner(zoom);
  return { center: unproject((northWest.x + southEast.x) / 2, (northWest.y + southEast.y) / 2, zoom), zoom };
}

/** A tile's address from the template ("https://tile.example.org/{z}/{x}/{y}.png"). */
export function tileURL(template, tile) {
  return template.replace("{z}", String(tile.z)).replace("{x}", String(tile.x)).replace("{y}", String(tile.y));
}

/** "55.67610, 12.56830": a place as text, to five decimals (about a metre). */
export function placeText(place) {
  return `${Number(place.lat).toFixed(5)}, ${Number(place.lon).toFixed(5)}`;
}

// What follows draws: it runs in the browser only.

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}) {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  return element;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

/** The server's tile template and the credit it asks for; null when maps are off. */
export function tileSettings() {
  const template = document.querySelector('meta[name="roost-map-tiles"]')?.content;
  if (!template) return null;
  return { template, attribution: document.querySelector('meta[name="roost-map-attribution"]')?.content || "" };
}

/** A link to the place on OpenStreetMap's own site. */
function placeLink(place) {
  const { lat, lon } = place;
  return element("a", { href: `https://www.openstreetmap.org/?mlat=${lat}&mlon=${lon}#map=17/${lat}/${lon}`, target: "_blank", rel: "noopener" },
    "Open in a map");
}

/**
 * A map of `layers`: {markers: [{lat, lon, label, kind: "place"|"person"|"walker"}], circle:
 * {lat, lon, radius_m}, trail: [{lat, lon}], area: [{lat, lon}] (a polygon, a group's streets)},
 * named `label` for screen readers. Returns
 * {element, update(layers)}; update redraws with new layers, keeping the reader's pan and zoom
 * once they have moved the map.
 */
export function createMap({ label, layers, height = 220 }) {
  const settings = tileSettings();
  let current = layers;
  const first = () => current.markers?.[0] ?? current.trail?.[current.trail.length - 1] ?? current.circle ?? current.area?.[0];
  const caption = element("p", { class: "map-caption small" });
  const writeCaption = () => {
    const place = first();
    caption.replaceChildren(...(place ? [`${label}: ${placeText(place)}`,
      current.circle?.radius_m ? ` (within ${Math.round(current.circle.radius_m)} m)` : "", " · ", placeLink(place)] : [`${label}: no place known`]));
  };
  writeCaption();
  if (!settings) {
    return { element: element("div", { class: "map-box" }, caption), update(next) { current = next; writeCaption(); } };
  }

  const tileLayer = element("div", { class: "map-tiles", "aria-hidden": "true" });
  const overlay = svg("svg", { class: "map-overlay", "aria-hidden": "true" });
  const zoomIn = element("button", { type: "button", class: "map-zoom secondary", "aria-label": "Zoom in" }, "+");
  const zoomOut = element("button", { type: "button", class: "map-zoom secondary", "aria-label": "Zoom out" }, "−");
  const credit = element("p", { class: "map-credit" }, settings.attribution);
  const failed = element("p", { class: "map-failed", hidden: true }, "The map could not be loaded; the place is written below.");
  const view = element("div", {
    class: "map", tabindex: "0", role: "region",
    "aria-label": `Map: ${label}. Arrow keys move it, plus and minus zoom.`,
  }, tileLayer, overlay, element("div", { class: "map-controls" }, zoomIn, zoomOut), credit, failed);
  view.style.height = `${height}px`; // through the CSSOM: the page's CSP refuses style attributes in markup
  const box = element("div", { class: "map-box" }, view, caption);

  let center = null;
  let zoom = 15;
  let moved = false; // the reader panned or zoomed: updates no longer re-fit the view
  const images = new Map(); // "z/x/y" → <img>
  let loaded = 0;
  let errors = 0;

  const size = () => ({ width: view.clientWidth || 320, height: view.clientHeight || height });
  // A circle is fitted by its edges (a kilometre's circle is shown whole), not only its centre.
  const circleEdges = (circle) => {
    const dLat = circle.radius_m / 111195;
    const dLon = dLat / Math.max(0.01, Math.cos((circle.lat * Math.PI) / 180));
    return [{ lat: circle.lat + dLat, lon: circle.lon - dLon }, { lat: circle.lat - dLat, lon: circle.lon + dLon }];
  };
  const everyPlace = () => [...(current.markers ?? []), ...(current.trail ?? []), ...(current.area ?? []),
    ...(current.circle ? [current.circle, ...(current.circle.radius_m ? circleEdges(current.circle) : [])] : [])];

  function refit() {
    const { width, height: tall } = size();
    const framed = fit(everyPlace(), width, tall);
    center = framed.center;
    zoom = framed.zoom;
  }

  function draw() {
    if (!center) refit();
    const { width, height: tall } = size();
    const wanted = new Set();
    for (const tile of tilesFor(center, zoom, width, tall)) {
      const key = `${tile.z}/${tile.x}/${tile.y}`;
      wanted.add(key);
      let image = images.get(key);
      if (!image) {
        image = element("img", { alt: "", draggable: "false", referrerpolicy: "strict-origin-when-cross-origin" });
        image.addEventListener("load", () => { loaded += 1; failed.hidden = true; view.classList.remove("failed"); });
        image.addEventListener("error", () => {
          errors += 1;
          if (!loaded && errors >= Math.min(4, images.size)) { failed.hidden = false; view.classList.add("failed"); }
        });
        image.src = tileURL(settings.template, tile);
        images.set(key, image);
        tileLayer.append(image);
      }
      image.style.cssText = `left:${tile.left}px;top:${tile.top}px;width:${tile.size}px;height:${tile.size}px`;
      image.dataset.tile = key;
    }
    for (const [key, image] of images) {
      if (!wanted.has(key)) { image.remove(); images.delete(key); }
    }
    const at = (place) => toView(place, center, zoom, width, tall);
    overlay.setAttribute("viewBox", `0 0 ${width} ${tall}`);
    const shapes = [];
    if (current.area?.length > 2) {
      shapes.push(svg("polygon", { class: "area", points: current.area.map((place) => { const p = at(place); return `${p.x},${p.y}`; }).join(" ") }));
    }
    if (current.circle?.radius_m) {
      const middle = at(current.circle);
      shapes.push(svg("circle", { class: "accuracy", cx: middle.x, cy: middle.y, r: Math.max(4, current.circle.radius_m / metresPerPixel(current.circle.lat, zoom)) }));
    }
    if (current.trail?.length > 1) {
      shapes.push(svg("polyline", { class: "trail", points: current.trail.map((place) => { const p = at(place); return `${p.x},${p.y}`; }).join(" ") }));
    }
    for (const marker of current.markers ?? []) {
      const p = at(marker);
      const group = svg("g", { class: `marker ${marker.kind ?? "place"}`, transform: `translate(${p.x} ${p.y})` });
      group.append(svg("circle", { r: marker.kind === "person" ? 7 : 9 }));
      if (marker.label) {
        const text = svg("text", { x: 12, y: 4 });
        text.textContent = marker.label;
        group.append(text);
      }
      shapes.push(group);
    }
    overlay.replaceChildren(...shapes);
  }

  function panBy(dx, dy) {
    const middle = project(center.lat, center.lon, zoom);
    center = unproject(middle.x + dx, middle.y + dy, zoom);
    center.lat = clamp(center.lat, -MAX_LAT, MAX_LAT);
    moved = true;
    draw();
  }

  function zoomTo(next) {
    zoom = clamp(next, MIN_ZOOM, MAX_ZOOM);
    moved = true;
    draw();
  }

  listen(view, zoomIn, zoomOut, { panBy, zoomTo, zoom: () => zoom });

  // Drawn once the map has a size on the screen, and again when that size changes.
  new ResizeObserver(() => { if (view.clientWidth) draw(); }).observe(view);

  return {
    element: box,
    update(next) {
      current = next;
      if (!moved) center = null;
      writeCaption();
      if (view.clientWidth) draw();
    },
  };
}

/** A map's gestures: one pointer dragging pans, two pinch; the wheel, +/- and the two buttons
 * zoom; the arrow keys pan. `zoom()` reads the map's zoom now. */
function listen(view, zoomIn, zoomOut, { panBy, zoomTo, zoom }) {
  const pointers = new Map();
  let pinch = null;
  view.addEventListener("pointerdown", (event) => {
    if (event.target.closest("button")) return;
    view.setPointerCapture(event.pointerId);
    pointers.set(event.pointerId, { x: event.clientX, y: event.clientY });
    if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      pinch = { distance: Math.hypot(a.x - b.x, a.y - b.y), zoom: zoom() };
    }
  });
  view.addEventListener("pointermove", (event) => {
    const last = pointers.get(event.pointerId);
    if (!last) return;
    const now = { x: event.clientX, y: event.clientY };
    pointers.set(event.pointerId, now);
    if (pointers.size === 1) {
      panBy(last.x - now.x, last.y - now.y);
    } else if (pinch && pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      const distance = Math.hypot(a.x - b.x, a.y - b.y);
      if (pinch.distance > 0) zoomTo(pinch.zoom + Math.log2(distance / pinch.distance));
    }
  });
  const release = (event) => {
    pointers.delete(event.pointerId);
    if (pointers.size < 2) pinch = null;
  };
  view.addEventListener("pointerup", release);
  view.addEventListener("pointercancel", release);
  view.addEventListener("wheel", (event) => {
    event.preventDefault();
    zoomTo(zoom() + (event.deltaY < 0 ? 0.5 : -0.5));
  }, { passive: false });
  view.addEventListener("keydown", (event) => {
    const step = 64;
    const moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
    if (moves[event.key]) panBy(...moves[event.key]);
    else if (event.key === "+" || event.key === "=") zoomTo(Math.round(zoom()) + 1);
    else if (event.key === "-" || event.key === "_") zoomTo(Math.round(zoom()) - 1);
    else return;
    event.preventDefault();
  });
  zoomIn.addEventListener("click", () => zoomTo(Math.round(zoom()) + 1));
  zoomOut.addEventListener("click", () => zoomTo(Math.round(zoom()) - 1));
}

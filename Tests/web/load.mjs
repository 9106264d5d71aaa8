// Loads one of the web app's modules from its source as a data: URL, so Node reads it as the
// browser does (an ES module), without a package.json in web/ (which the server would serve).
import { readFileSync } from "node:fs";

export async function load(path) {
  const source = readFileSync(new URL(`../../web/js/${path}`, import.meta.url), "utf8");
  return import(`data:text/javascript;base64,${Buffer.from(source).toString("base64")}`);
}

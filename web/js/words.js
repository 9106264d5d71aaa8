// Words for people: what the app shows instead of what machines say. Pure functions, no
// imports, so that Node's test runner can load this module on its own (Tests/web/).

/** A session's client as a person names it: "Chrome on Android", from a User-Agent string. */
export function deviceName(userAgent) {
  const ua = String(userAgent || "");
  if (!ua) return "Unknown device";
  // Order matters: Edge, Opera and Samsung's browser also say "Chrome"; Chrome also says "Safari".
  const browsers = [
    [/Edg(e|A|iOS)?\//, "Edge"], [/OPR\/|Opera/, "Opera"], [/SamsungBrowser\//, "Samsung Internet"],
    [/Firefox\/|FxiOS\//, "Firefox"], [/Chrome\/|CriOS\/|Chromium\//, "Chrome"], [/Safari\//, "Safari"],
  ];
  const systems = [
    [/Android/, "Android"], [/iPhone|iPad|iPod/, "iOS"], [/CrOS/, "ChromeOS"], [/Windows/, "Windows"],
    [/Mac OS X|Macintosh/, "macOS"], [/Linux/, "Linux"],
  ];
  const browser = browsers.find(([pattern]) => pattern.test(ua))?.[1];
  const system = systems.find(([pattern]) => pattern.test(ua))?.[1];
  if (browser && system) return `${browser} on ${system}`;
  if (browser || system) return browser || system;
  // Not a browser (curl, a script): its own first word, without its version.
  return ua.split(/[\s/]/)[0].slice(0, 40) || "Unknown device";
}

// The server's routes as the pages call them: JSON in, JSON out, refusals as ApiError.
//
// Every URL is relative to the page (/viewer/...), so the viewer also works behind a proxy that
// serves the whole server under a path prefix. Tokens never go in a URL: a seat's token is a
// header (X-Seat-Token) of the request that needs it.

export const SERVICE = new URL("../service/", document.baseURI);
export const VIEWER_API = new URL("api/", document.baseURI);
export const SEAT_TOKEN_HEADER = "X-Seat-Token";

/** A refused request: the server's {detail, code, reason} and the HTTP status. */
export class ApiError extends Error {
  constructor(status, body) {
    const detail = typeof body?.detail === "string" ? body.detail : `HTTP ${status}`;
    super(detail);
    this.status = status;
    this.code = body?.code ?? null;
    this.reason = body?.reason ?? null;
  }

  /** The refusal as a person reads it: the reason code, then the server's message. */
  describe() {
    return this.reason ? `${this.reason}: ${this.message}` : this.message;
  }
}

async function send(url, options = {}) {
  const response = await fetch(url, { cache: "no-store", ...options });
  let body = null;
  const text = await response.text();
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = { detail: text };
    }
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

/** GET a JSON reply. */
export function getJSON(url) {
  return send(url);
}

/** POST a JSON body; `headers` adds e.g. the seat token. */
export function postJSON(url, body, headers = {}) {
  return send(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body ?? {}),
  });
}

/** The service's route for `path` (e.g. "games/ID/moves"). */
export function serviceURL(path) {
  return new URL(path, SERVICE);
}

/** The viewer's JSON route for `path` (e.g. "replay"). */
export function viewerURL(path) {
  return new URL(path, VIEWER_API);
}

/** The spectators' WebSocket of a game, on this page's host (ws: or wss: as the page). */
export function eventsURL(gameId) {
  const url = serviceURL(`games/${encodeURIComponent(gameId)}/events`);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url;
}

/** A query parameter of this page's URL. */
export function pageParameter(name) {
  return new URLSearchParams(window.location.search).get(name);
}

/** Make an element: el("td", {class: "x", dataset: {ply: 3}}, "text", child...). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "dataset") Object.assign(node.dataset, value);
    else if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...present(children));
  return node;
}

/** Replace `node`'s children with `children`, leaving out null and undefined ones. */
export function fill(node, ...children) {
  node.replaceChildren(...present(children));
  return node;
}

function present(children) {
  return children.filter((child) => child !== null && child !== undefined && child !== false);
}

/** "1 move", "2 moves". */
export function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** "1-0", "0-1", "1/2-1/2" for the service's result names (others unchanged). */
export function pgnResult(result) {
  return { white_wins: "1-0", black_wins: "0-1", draw: "1/2-1/2" }[result] ?? result ?? "*";
}

/** Seconds as "240 µs", "12 ms", "3.2 s", "1 min 05 s"; "" for none. */
export function formatSeconds(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds > 0 && seconds < 0.001) return `${Math.round(seconds * 1e6)} µs`;
  if (seconds > 0 && seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${String(Math.round(seconds % 60)).padStart(2, "0")} s`;
}

// The games page: the service's games (GET /service/games, every 1.5 s) and the archived ones
// (GET /viewer/api/archive, every 5 s), each linking to its game page.

import { ApiError, el, getJSON, pgnResult, plural, serviceURL, viewerURL } from "./api.js";

const LIVE_EVERY_MS = 1500;
const ARCHIVE_EVERY_MS = 5000;

const liveBody = document.querySelector("#games tbody");
const archiveBody = document.querySelector("#archive tbody");
const liveStatus = document.getElementById("live-status");
const archiveStatus = document.getElementById("archive-status");
let liveIds = new Set();

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString() : date.toLocaleString();
}

function words(text) {
  return text ? text.replaceAll("_", " ") : "";
}

function player(name, spec) {
  return el("td", {}, el("span", { class: "name" }, name),
    spec && spec !== name ? el("span", { class: "spec" }, spec) : null);
}

function gameLink(gameId, label) {
  return el("td", {}, el("a", { href: `game.html?id=${encodeURIComponent(gameId)}`, class: "open" }, label));
}

function liveRow(game) {
  const status = game.aborted ? "aborted"
    : game.status === "in_progress" ? "playing" : `${pgnResult(game.result)} · ${words(game.termination)}`;
  return el("tr", { dataset: { gameId: game.game_id, status: game.status } },
    player(game.white, game.white_player),
    player(game.black, game.black_player),
    el("td", { class: game.status === "in_progress" && !game.aborted ? "live" : "" }, status),
    el("td", { class: "number" }, String(game.ply)),
    el("td", {}, game.status === "in_progress" && !game.aborted ? game.current_turn : ""),
    el("td", {}, when(game.last_updated)),
    gameLink(game.game_id, game.status === "in_progress" ? "Watch" : "Replay"));
}

function archiveRow(game) {
  return el("tr", { dataset: { gameId: game.game_id } },
    player(game.white, game.white_player),
    player(game.black, game.black_player),
    el("td", {}, pgnResult(game.result)),
    el("td", {}, game.termination ? words(game.termination) : "unfinished"),
    el("td", { class: "number" }, String(game.plies)),
    el("td", {}, when(game.ended_at ?? game.started_at)),
    gameLink(game.game_id, "Replay"));
}

async function refreshLive() {
  try {
    const games = await getJSON(serviceURL("games"));
    games.sort((a, b) => (a.last_updated < b.last_updated ? 1 : -1));
    liveIds = new Set(games.map((game) => game.game_id));
    liveBody.replaceChildren(...games.map(liveRow));
    const playing = games.filter((game) => game.status === "in_progress" && !game.aborted).length;
    liveStatus.textContent = games.length
      ? `${plural(games.length, "game")} in memory, ${playing} in play.`
      : "No game in memory. Start one on the Play page, or through POST /service/games "
        + "(a game a client plays is listed when created public, or by serve --list-games all).";
    liveBody.closest("table").hidden = games.length === 0;
  } catch (error) {
    liveStatus.textContent = error instanceof ApiError && error.reason === "listing_off"
      ? "This server does not list its games (serve --list-games off); open one by its id."
      : `Cannot list the games: ${error.message}`;
  }
}

async function refreshArchive() {
  try {
    const games = (await getJSON(viewerURL("archive"))).filter((game) => !liveIds.has(game.game_id));
    archiveBody.replaceChildren(...games.map(archiveRow));
    archiveStatus.textContent = games.length
      ? `The latest ${plural(games.length, "game")} that left memory (the service's archive), newest first.`
      : "No archived game (the server archives with serve --archive DIR).";
    archiveBody.closest("table").hidden = games.length === 0;
  } catch (error) {
    archiveStatus.textContent = `Cannot read the archive: ${error.message}`;
  }
}

await refreshLive();
await refreshArchive();
setInterval(refreshLive, LIVE_EVERY_MS);
setInterval(refreshArchive, ARCHIVE_EVERY_MS);

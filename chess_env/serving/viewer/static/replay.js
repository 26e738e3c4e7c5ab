// The replay page: a PGN file or an arena run's games.jsonl, opened by the user, sent to
// POST /viewer/api/replay (python-chess reads it), its games listed, one stepped through.

import { el, postJSON, viewerURL } from "./api.js";
import { Replayer } from "./replayer.js";

const MAX_TEXT = 5 * 1024 * 1024; // characters the server replays (chess_env.serving.viewer.models)
const WINDOW = 200; // games per request (MAX_REPLAY_GAMES)

const fileInput = document.getElementById("file");
const formatSelect = document.getElementById("format");
const message = document.getElementById("message");
const picker = document.getElementById("picker");
const pickerSummary = document.getElementById("picker-summary");
const list = document.querySelector("#game-list tbody");
const earlier = document.getElementById("earlier");
const later = document.getElementById("later");
const windowLabel = document.getElementById("window");
const holder = document.getElementById("replayer");
const replayer = new Replayer(holder);

let file = { name: "", text: "", format: "pgn" };
let reply = null;
// Where the windows shown before this one started: a reply may hold fewer than WINDOW games
// (the server stops after a window's worth of plies), so "earlier" goes back by these.
let starts = [];

function showMessage(text) {
  message.textContent = text;
  message.hidden = !text;
}

/** The format the user chose, else the file's: .jsonl/.json, or text starting with "{". */
function formatOf(name, text) {
  if (formatSelect.value !== "auto") return formatSelect.value;
  if (/\.jsonl?$/i.test(name)) return "jsonl";
  if (/\.pgn$/i.test(name)) return "pgn";
  return text.trimStart().startsWith("{") ? "jsonl" : "pgn";
}

function words(text) {
  return text ? text.replaceAll("_", " ") : "";
}

function row(game) {
  const pick = () => show(game.index);
  return el("tr", { dataset: { index: game.index }, class: "pick", onclick: pick },
    el("td", { class: "number" }, String(game.index + 1)),
    el("td", { class: "white-name" }, game.white),
    el("td", { class: "black-name" }, game.black),
    el("td", { class: "result" }, game.result),
    el("td", {}, words(game.termination)),
    el("td", {}, game.opening ?? ""),
    el("td", { class: "number" }, String(game.plies.length)));
}

function show(index) {
  const game = reply.games.find((candidate) => candidate.index === index);
  if (!game) return;
  for (const selected of list.querySelectorAll(".selected")) selected.classList.remove("selected");
  list.querySelector(`tr[data-index="${index}"]`)?.classList.add("selected");
  holder.hidden = false;
  replayer.setGame(game, { at: "start" });
}

async function load(start) {
  showMessage("Reading…");
  try {
    reply = await postJSON(viewerURL("replay"), { text: file.text, format: file.format, start, count: WINDOW });
  } catch (error) {
    showMessage(`${file.name}: ${error.describe ? error.describe() : error.message}`);
    return;
  }
  showMessage("");
  list.replaceChildren(...reply.games.map(row));
  const last = reply.start + reply.games.length;
  pickerSummary.textContent = `${file.name}: ${reply.total} game${reply.total === 1 ? "" : "s"}`;
  const paged = reply.start > 0 || last < reply.total;
  windowLabel.textContent = paged ? `games ${reply.start + 1}–${last} of ${reply.total}` : "";
  earlier.hidden = reply.start === 0;
  later.hidden = last >= reply.total;
  picker.hidden = false;
  if (reply.games.length) show(reply.games[0].index);
  else showMessage(`${file.name}: no game in this file.`);
}

fileInput.addEventListener("change", async () => {
  const chosen = fileInput.files[0];
  if (!chosen) return;
  const text = await chosen.text();
  if (text.length > MAX_TEXT) {
    showMessage(`${chosen.name} is over ${MAX_TEXT / 1024 / 1024} MB: split it into smaller files.`);
    return;
  }
  file = { name: chosen.name, text, format: formatOf(chosen.name, text) };
  fileInput.blur(); // the arrow keys step through the game, not the form
  starts = [];
  await load(0);
});
formatSelect.addEventListener("change", () => {
  if (file.text) {
    file.format = formatOf(file.name, file.text);
    starts = [];
    load(0);
  }
});
earlier.addEventListener("click", () => load(starts.pop() ?? 0));
later.addEventListener("click", () => {
  starts.push(reply.start);
  load(reply.start + reply.games.length);
});

// The play page: a person against any player the server makes (random, greedy, alphabeta:N,
// stockfish...). POST /service/games creates the game with the person on a remote seat; the seat
// token from its reply stays in this page's memory (and sessionStorage, for a reload: never in
// a URL) and goes in the X-Seat-Token header of each move and of a resignation. A move is a
// click on a piece then on a square, a drag, or SAN/UCI typed in the box; the server says
// whether it is legal, and its refusal (the text env's reason code and message) is shown. The
// opponent's answers arrive over the game's WebSocket (chess_env/serving/viewer/static/live.js).

import { ApiError, SEAT_TOKEN_HEADER, el, getJSON, pageParameter, postJSON, serviceURL } from "./api.js";
import { placement } from "./board.js";
import { LiveGame } from "./live.js";
import { Replayer } from "./replayer.js";

const STORE_PREFIX = "polyarena.seat.";
const RESIGN_CONFIRM_MS = 4000;

const setup = document.getElementById("setup");
const title = document.getElementById("title");
const message = document.getElementById("message");
const holder = document.getElementById("replayer");

const moveText = el("input", { id: "move-text", placeholder: "e4, Nf3, O-O, e7e8q", autocomplete: "off",
  spellcheck: "false", maxlength: 10, "aria-label": "your move in SAN or UCI" });
const moveForm = el("form", { class: "move-form", id: "move-form" }, moveText,
  el("button", { type: "submit", id: "move-send" }, "Play"));
const promotion = el("select", { id: "promotion", "aria-label": "promote to" },
  ...[["q", "queen"], ["r", "rook"], ["b", "bishop"], ["n", "knight"]].map(
    ([value, name]) => el("option", { value }, name)));
const resignButton = el("button", { type: "button", id: "resign", class: "danger" }, "Resign");
const newGameButton = el("button", { type: "button", id: "new-game" }, "New game");
const turnNote = el("p", { class: "turn-note", id: "turn-note" });
const panel = el("div", { class: "play-panel", id: "play-panel" }, turnNote, moveForm,
  el("label", { class: "promotion" }, "Promote to ", promotion),
  el("div", { class: "buttons" }, resignButton, newGameButton));

const replayer = new Replayer(holder, { sideTop: [panel], onChange: () => updateInput() });

let seat = null; // {gameId, color, token}
let live = null;
let state = null; // the service's Game: its status and legal moves
let busy = false;
let turnStarted = null; // when the person's turn began, for the move's thinking_time
let resignArmed = null;

function showMessage(text, reason = null) {
  message.textContent = text;
  message.hidden = !text;
  if (reason) message.dataset.reason = reason;
  else delete message.dataset.reason;
}

function myTurn() {
  return seat !== null && state !== null && state.status === "in_progress" && !live?.aborted
    && state.current_turn === seat.color && replayer.length === state.move_history.length;
}

function updateInput() {
  const playing = myTurn() && replayer.atEnd && !busy;
  replayer.board.setInput(playing ? { canSelect, onMove } : null);
  replayer.board.setHints(playing ? state.board_state.legal_moves : []);
  moveText.disabled = !playing;
  moveForm.querySelector("button").disabled = !playing;
  const over = state !== null && (state.status !== "in_progress" || live?.aborted);
  resignButton.disabled = seat === null || over;
  if (seat === null) turnNote.textContent = "You have no seat in this game: you are watching it.";
  else if (over) turnNote.textContent = "The game is over.";
  else if (!myTurn()) turnNote.textContent = "Waiting for your opponent…";
  else if (!replayer.atEnd) turnNote.textContent = "Your move: go to the last move (End) to play.";
  else turnNote.textContent = "Your move: click or drag a piece, or type it.";
  if (playing && turnStarted === null) turnStarted = performance.now();
}

function canSelect(square, symbol) {
  const white = symbol === symbol.toUpperCase();
  return (white ? "white" : "black") === seat.color;
}

function onMove(from, to) {
  const symbol = placement(replayer.fen)[from];
  const promotes = symbol?.toLowerCase() === "p" && (to[1] === "8" || to[1] === "1");
  play(`${from}${to}${promotes ? promotion.value : ""}`);
}

async function play(move) {
  if (busy || seat === null) return;
  busy = true;
  updateInput();
  const thinking = turnStarted === null ? 0 : (performance.now() - turnStarted) / 1000;
  try {
    state = await postJSON(serviceURL(`games/${seat.gameId}/moves`),
      { move, thinking_time: Math.round(thinking * 100) / 100 },
      { [SEAT_TOKEN_HEADER]: seat.token });
    showMessage("");
    moveText.value = "";
    turnStarted = null;
  } catch (error) {
    if (error instanceof ApiError) showMessage(`Refused: ${error.describe()}`, error.reason ?? error.code);
    else showMessage(`The move did not reach the server: ${error.message}`);
  } finally {
    busy = false;
  }
  await live.refresh();
}

async function refreshState() {
  try {
    state = await getJSON(serviceURL(`games/${seat?.gameId ?? pageParameter("id")}`));
  } catch {
    state = null; // left memory: over
  }
  updateInput();
}

moveForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = moveText.value.trim();
  if (text) play(text);
});

resignButton.addEventListener("click", async () => {
  if (resignArmed === null) {
    resignButton.textContent = "Really resign?";
    resignArmed = setTimeout(() => {
      resignButton.textContent = "Resign";
      resignArmed = null;
    }, RESIGN_CONFIRM_MS);
    return;
  }
  clearTimeout(resignArmed);
  resignArmed = null;
  resignButton.textContent = "Resign";
  try {
    state = await postJSON(serviceURL(`games/${seat.gameId}/resign`), {}, { [SEAT_TOKEN_HEADER]: seat.token });
  } catch (error) {
    showMessage(`Refused: ${error.describe ? error.describe() : error.message}`, error.reason);
  }
  await live.refresh();
});

newGameButton.addEventListener("click", () => {
  live?.close();
  live = null;
  seat = null;
  state = null;
  holder.hidden = true;
  setup.hidden = false;
  title.textContent = "Play a game";
  showMessage("");
  history.replaceState(null, "", "play.html");
});

function follow(gameId) {
  setup.hidden = true;
  holder.hidden = false;
  live = new LiveGame(gameId, replayer, {
    onUpdate: (game) => {
      title.textContent = `${game.white} – ${game.black}`;
      refreshState();
    },
    onMissing: (error) => showMessage(error.message),
  });
  live.start();
}

setup.addEventListener("submit", async (event) => {
  event.preventDefault();
  const chosen = setup.querySelector("input[name=color]:checked").value;
  const color = chosen === "random" ? (Math.random() < 0.5 ? "white" : "black") : chosen;
  const other = color === "white" ? "black" : "white";
  const spec = document.getElementById("opponent").value.trim();
  const me = { player: "remote", name: document.getElementById("name").value.trim() || "You" };
  const opponent = { player: spec, name: spec.slice(0, 50) };
  showMessage("Starting…");
  let created;
  try {
    created = await postJSON(serviceURL("games"), { [color]: me, [other]: opponent });
  } catch (error) {
    showMessage(`The server refused the game: ${error.describe ? error.describe() : error.message}`, error.reason);
    return;
  }
  showMessage("");
  const gameId = created.game.game_id;
  seat = { gameId, color, token: created.tokens[color] };
  sessionStorage.setItem(STORE_PREFIX + gameId, JSON.stringify({ color, token: seat.token }));
  history.replaceState(null, "", `play.html?id=${encodeURIComponent(gameId)}`);
  state = created.game;
  turnStarted = null;
  replayer.setOrientation(color);
  follow(gameId);
});

const resumed = pageParameter("id");
if (resumed) {
  const stored = JSON.parse(sessionStorage.getItem(STORE_PREFIX + resumed) ?? "null");
  seat = stored ? { gameId: resumed, color: stored.color, token: stored.token } : null;
  if (seat) replayer.setOrientation(seat.color);
  follow(resumed);
}

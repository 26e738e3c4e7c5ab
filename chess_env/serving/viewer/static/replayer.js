// One game on screen, ply by ply: the board, both players with their thinking time, the moves
// in SAN with each move's time, evaluation and comment, and the controls to step through them
// (buttons, the arrow keys, Home and End, a click on a move).
//
// A game is the viewer's ReplayGame (GET /viewer/api/games/{id}/replay, POST /viewer/api/replay):
// every ply carries the FEN after it, so stepping is a look-up, never a rule. The position on
// screen is in #fen (and data-fen on the board's <svg>).

import { Board, sideToMove } from "./board.js";
import { el, fill, formatSeconds, plural } from "./api.js";

const CP_SCALE = 0.00368208; // lichess's win-probability curve, from centipawns
// The controls' icons, as SVG paths in a 16-unit square (fonts lack the media-control glyphs).
const ICONS = {
  first: "M3 3h2v10H3zM13 3v10L6 8z",
  prev: "M11 3v10L4 8z",
  next: "M5 3v10l7-5z",
  last: "M11 3h2v10h-2zM3 3v10l7-5z",
  flip: "M5 1 1.5 5H4v6h2V5h2.5zM11 15l3.5-4H12V5h-2v6H7.5z",
};

function icon(path) {
  const image = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  image.setAttribute("viewBox", "0 0 16 16");
  image.setAttribute("class", "icon");
  image.setAttribute("aria-hidden", "true");
  const shape = document.createElementNS("http://www.w3.org/2000/svg", "path");
  shape.setAttribute("d", path);
  image.append(shape);
  return image;
}

/** White's winning chances (0 to 100) for an evaluation from White's side. */
export function whiteShare(cp) {
  return 50 + 50 * (2 / (1 + Math.exp(-CP_SCALE * cp)) - 1);
}

/** An evaluation as text: "+0.35", "-1.20", "#3", "#-2". */
export function formatEval(ply) {
  if (ply.mate !== null && ply.mate !== undefined) return `#${ply.mate}`;
  if (ply.eval_cp === null || ply.eval_cp === undefined) return "";
  const pawns = ply.eval_cp / 100;
  return `${pawns > 0 ? "+" : ""}${pawns.toFixed(2)}`;
}

/** "12." for White's move 12, "12..." for Black's. */
export function moveLabel(ply) {
  return `${ply.move_number}${ply.color === "white" ? "." : "..."}`;
}

function words(text) {
  return text ? String(text).replaceAll("_", " ") : "";
}

export class Replayer {
  /**
   * @param {HTMLElement} container where the replayer is built
   * @param {{sideTop?: HTMLElement[], onChange?: Function}} options: elements to put at the top
   *   of the side column, and a function called after every change of the ply shown
   */
  constructor(container, { sideTop = [], onChange = null } = {}) {
    this.game = null;
    this.ply = 0;
    this.onChange = onChange;
    this.note = null; // a line the page adds to the status (e.g. "aborted")
    this.#build(container, sideTop);
    this.board = new Board(this.boardHolder);
    document.addEventListener("keydown", (event) => this.#key(event));
  }

  #build(container, sideTop) {
    this.boardHolder = el("div", { class: "board-holder", id: "board" });
    this.evalFill = el("div", { class: "eval-fill", id: "eval-fill" });
    this.evalBar = el("div", { class: "eval-bar", id: "eval-bar", hidden: true }, this.evalFill);
    this.players = { top: el("div", { class: "player top" }), bottom: el("div", { class: "player bottom" }) };
    this.fenCode = el("code", { id: "fen" });
    this.plyCode = el("span", { id: "ply" }, "0");
    const button = (id, icon, title, action) =>
      el("button", { id, type: "button", title, "aria-label": title, onclick: action }, icon);
    const controls = el(
      "div",
      { class: "controls" },
      button("first", icon(ICONS.first), "Start position (Home)", () => this.goto(0)),
      button("prev", icon(ICONS.prev), "Previous move (←)", () => this.step(-1)),
      button("next", icon(ICONS.next), "Next move (→)", () => this.step(1)),
      button("last", icon(ICONS.last), "Last move (End)", () => this.goto(this.length)),
      button("flip", icon(ICONS.flip), "Flip the board", () => this.flip()),
    );
    const boardColumn = el(
      "section",
      { class: "board-column" },
      this.players.top,
      el("div", { class: "board-frame" }, this.evalBar, this.boardHolder),
      this.players.bottom,
      controls,
      el("p", { class: "fen-line" }, "Ply ", this.plyCode, " · FEN ", this.fenCode),
    );
    this.status = el("div", { class: "game-status", id: "game-status" });
    this.detail = el("div", { class: "ply-detail", id: "ply-detail" });
    this.moves = el("ol", { class: "moves", id: "moves" });
    this.moves.addEventListener("click", (event) => {
      const target = event.target.closest("[data-ply]");
      if (target) this.goto(Number(target.dataset.ply));
    });
    const side = el("section", { class: "side-column" }, ...sideTop, this.status, this.detail, this.moves);
    container.append(el("div", { class: "replayer" }, boardColumn, side));
  }

  get length() {
    return this.game ? this.game.plies.length : 0;
  }

  get atEnd() {
    return this.ply >= this.length;
  }

  /** The FEN on screen. */
  get fen() {
    if (!this.game) return null;
    return this.ply === 0 ? this.game.start_fen : this.game.plies[this.ply - 1].fen_after;
  }

  /** Show `game`. `at`: "start", "end", or (default) the ply shown before when it is the
   * same game and was not at its end (a live game refreshed while someone looks back), else the
   * end. */
  setGame(game, { at = null } = {}) {
    const sameGame = this.game !== null && game.game_id !== null && this.game.game_id === game.game_id;
    const keep = at === null && sameGame && !this.atEnd;
    this.game = game;
    this.#renderMoves();
    if (at === "start") this.goto(0);
    else this.goto(keep ? Math.min(this.ply, this.length) : this.length);
  }

  /** Add a ply that a live game just played (a move_made frame); followed if at the end. */
  appendPly(ply) {
    if (!this.game || ply.ply !== this.length + 1) return false;
    const wasAtEnd = this.atEnd;
    this.game.plies.push(ply);
    this.moves.append(this.#moveRow(ply));
    this.goto(wasAtEnd ? this.length : this.ply);
    return true;
  }

  step(delta) {
    this.goto(this.ply + delta);
  }

  goto(ply) {
    if (!this.game) return;
    this.ply = Math.max(0, Math.min(this.length, ply));
    const shown = this.ply === 0 ? null : this.game.plies[this.ply - 1];
    const fen = this.fen;
    this.board.show(fen, {
      lastMove: shown ? { from: shown.uci.slice(0, 2), to: shown.uci.slice(2, 4) } : null,
      check: shown ? /[+#]$/.test(shown.san) : false,
    });
    this.fenCode.textContent = fen;
    this.plyCode.textContent = String(this.ply);
    this.board.svg.dataset.ply = String(this.ply);
    for (const row of this.moves.querySelectorAll(".current")) row.classList.remove("current");
    const row = this.moves.querySelector(`li[data-ply="${this.ply}"]`);
    if (row) {
      row.classList.add("current");
      row.scrollIntoView({ block: "nearest" });
    }
    this.#renderPlayers();
    this.#renderStatus();
    this.#renderDetail(shown);
    this.#renderEval(shown);
    this.onChange?.(this);
  }

  flip() {
    this.board.flip();
    this.#renderPlayers();
  }

  setOrientation(color) {
    this.board.setOrientation(color);
    this.#renderPlayers();
  }

  /** A line added to the status (null: none), e.g. "aborted by its creator". */
  setNote(note) {
    this.note = note;
    this.#renderStatus();
  }

  #key(event) {
    if (!this.game || event.target.closest?.("input, textarea, select")) return;
    const moves = { ArrowLeft: () => this.step(-1), ArrowRight: () => this.step(1),
      Home: () => this.goto(0), End: () => this.goto(this.length) };
    const action = moves[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  }

  #renderMoves() {
    const start = el("li", { class: "ply start", dataset: { ply: 0 } },
      el("button", { type: "button", class: "san", dataset: { ply: 0 } }, "Start"),
      this.game.comment ? el("div", { class: "comment" }, this.game.comment) : null);
    fill(this.moves, start, ...this.game.plies.map((ply) => this.#moveRow(ply)));
  }

  #moveRow(ply) {
    const evaluation = formatEval(ply);
    return el(
      "li",
      { class: `ply ${ply.color}${ply.book ? " book" : ""}`, dataset: { ply: ply.ply } },
      el("span", { class: "number" }, moveLabel(ply)),
      el("button", { type: "button", class: "san", dataset: { ply: ply.ply } }, ply.san),
      el("span", { class: "time" }, ply.book ? "book" : formatSeconds(ply.seconds)),
      el("span", { class: "eval" }, evaluation, evaluation ? this.#miniBar(ply) : null),
      ply.comment ? el("div", { class: "comment" }, ply.comment) : null,
      ply.refused?.length ? el("div", { class: "refused" }, `refused: ${ply.refused.join(", ")}`) : null,
    );
  }

  #miniBar(ply) {
    const fillBar = el("span", { class: "mini-fill" });
    fillBar.style.width = `${whiteShare(ply.eval_cp ?? 0)}%`;
    return el("span", { class: "mini-bar", title: "White's share of the evaluation" }, fillBar);
  }

  #renderPlayers() {
    const game = this.game;
    if (!game) return;
    const bottom = this.board.orientation;
    const top = bottom === "white" ? "black" : "white";
    const over = game.result !== "*" || (game.status && game.status !== "in_progress");
    const toMove = !over && !this.note ? sideToMove(this.fen) : null;
    for (const [place, color] of [["top", top], ["bottom", bottom]]) {
      const name = game[color];
      const spec = game[`${color}_player`];
      const plies = game.plies.slice(0, this.ply).filter((p) => p.color === color && !p.book);
      const timed = plies.filter((p) => p.seconds !== null && p.seconds !== undefined);
      const total = timed.reduce((sum, p) => sum + p.seconds, 0);
      const box = this.players[place];
      fill(
        box,
        el("span", { class: `swatch ${color}` }),
        el("span", { class: "name" }, name),
        spec && spec !== name ? el("span", { class: "spec" }, spec) : null,
        el("span", { class: "total", title: "thinking time, moves up to the one shown" },
          timed.length ? `${formatSeconds(total)} in ${plural(timed.length, "move")}` : ""),
        toMove === color && this.atEnd ? el("span", { class: "to-move" }, "to move") : null,
      );
      box.dataset.color = color;
    }
  }

  #renderStatus() {
    const game = this.game;
    if (!game) return;
    const over = game.result !== "*" || (game.status && game.status !== "in_progress");
    const parts = [];
    if (over) {
      parts.push(el("strong", { class: "result" }, game.result));
      if (game.termination) parts.push(` · ${words(game.termination)}`);
    } else if (this.note === null) {
      const side = sideToMove(game.plies.length ? game.plies.at(-1).fen_after : game.start_fen);
      parts.push(el("strong", { class: "turn" }, `${side === "white" ? "White" : "Black"} to move`));
      parts.push(game.status === "in_progress" ? " · live" : " · unfinished");
    }
    if (this.note) parts.push(el("span", { class: "note" }, this.note));
    if (game.opening) parts.push(el("div", { class: "opening" }, game.opening));
    fill(this.status, ...parts);
    this.status.dataset.result = game.result;
  }

  #renderDetail(ply) {
    if (!ply) {
      this.detail.replaceChildren(el("span", { class: "muted" }, "Start position"));
      return;
    }
    const facts = [el("strong", {}, `${moveLabel(ply)} ${ply.san}`)];
    if (ply.book) facts.push(el("span", { class: "tag" }, "book"));
    if (ply.seconds !== null && ply.seconds !== undefined) {
      facts.push(el("span", { class: "tag time", id: "ply-time" }, formatSeconds(ply.seconds)));
    }
    const evaluation = formatEval(ply);
    if (evaluation) facts.push(el("span", { class: "tag eval", id: "ply-eval" }, evaluation));
    fill(
      this.detail,
      el("div", { class: "facts" }, ...facts),
      ply.comment ? el("p", { class: "comment", id: "ply-comment" }, ply.comment) : null,
      ply.refused?.length
        ? el("p", { class: "refused", id: "ply-refused" }, `Refused before it: ${ply.refused.join(", ")}`)
        : null,
    );
  }

  #renderEval(ply) {
    const analysed = this.game.plies.some((p) => p.eval_cp !== null && p.eval_cp !== undefined);
    this.evalBar.hidden = !analysed;
    if (!analysed) return;
    const cp = ply?.eval_cp ?? 0;
    const share = whiteShare(cp);
    this.evalFill.style.height = `${share}%`;
    this.evalBar.classList.toggle("flipped", this.board.orientation === "black");
    this.evalBar.title = ply ? formatEval(ply) || "no evaluation" : "start";
  }
}

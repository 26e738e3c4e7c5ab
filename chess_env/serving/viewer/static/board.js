// An SVG chess board: draws a FEN, highlights squares, and (for the play page) turns clicks and
// drags into (from, to) squares. It knows no rule of chess: positions come from the server
// (python-chess), and a move is whatever the person points at; the server says if it is legal.
//
// Each square is <g data-square="e4"> (its colour, highlights, coordinates and piece inside);
// the <svg> holds data-fen, the position shown. The pieces are python-chess's drawings, served
// as /viewer/pieces.svg and loaded once into a hidden <svg> of the page.

const SVG_NS = "http://www.w3.org/2000/svg";
const SQUARE = 45; // the pieces' own size
const FILES = "abcdefgh";
const PIECE_IDS = {
  p: "pawn", n: "knight", b: "bishop", r: "rook", q: "queen", k: "king",
};
const DRAG_THRESHOLD = 4; // pixels a press moves before it is a drag

let piecesLoaded = null;

/** Load the piece set once into the page (a hidden <svg> whose <defs> hold every piece). */
export function loadPieces() {
  if (piecesLoaded === null) {
    piecesLoaded = fetch(new URL("pieces.svg", document.baseURI))
      .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
      .then((text) => {
        const sprite = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
        const holder = document.createElementNS(SVG_NS, "svg");
        holder.setAttribute("id", "piece-set");
        holder.setAttribute("aria-hidden", "true");
        holder.classList.add("hidden-sprite");
        holder.append(document.importNode(sprite.querySelector("defs"), true));
        document.body.append(holder);
      });
  }
  return piecesLoaded;
}

/** The 64 squares of a FEN's placement: {e1: "K", e8: "k", ...}. */
export function placement(fen) {
  const squares = {};
  const ranks = fen.split(" ")[0].split("/");
  ranks.forEach((row, index) => {
    const rank = 8 - index;
    let file = 0;
    for (const symbol of row) {
      if (/\d/.test(symbol)) file += Number(symbol);
      else squares[`${FILES[file++]}${rank}`] = symbol;
    }
  });
  return squares;
}

/** "white" or "black": the side to move in a FEN. */
export function sideToMove(fen) {
  return fen.split(" ")[1] === "b" ? "black" : "white";
}

function svg(tag, attributes = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

function pieceUse(symbol, x, y) {
  const color = symbol === symbol.toUpperCase() ? "white" : "black";
  return svg("use", {
    href: `#${color}-${PIECE_IDS[symbol.toLowerCase()]}`,
    x, y, width: SQUARE, height: SQUARE, class: "piece",
  });
}

export class Board {
  /**
   * @param {HTMLElement} container where the board is drawn
   * @param {{orientation?: "white"|"black"}} options
   */
  constructor(container, { orientation = "white" } = {}) {
    this.container = container;
    this.orientation = orientation;
    this.fen = "8/8/8/8/8/8/8/8 w - - 0 1";
    this.lastMove = null;
    this.check = false;
    this.selected = null;
    this.hints = [];
    this.input = null; // {canSelect(square, symbol), onMove(from, to)} when a person moves
    this.press = null;
    this.svg = svg("svg", { viewBox: `0 0 ${8 * SQUARE} ${8 * SQUARE}`, class: "board" });
    this.svg.setAttribute("role", "img");
    this.container.append(this.svg);
    this.svg.addEventListener("pointerdown", (event) => this.#pointerDown(event));
    this.svg.addEventListener("pointermove", (event) => this.#pointerMove(event));
    this.svg.addEventListener("pointerup", (event) => this.#pointerUp(event));
    this.svg.addEventListener("pointercancel", () => this.#endPress());
    loadPieces().then(() => this.render(), () => this.render());
  }

  /** Show `fen`, with `lastMove` ({from, to} squares, or null) highlighted. */
  show(fen, { lastMove = null, check = false } = {}) {
    this.fen = fen;
    this.lastMove = lastMove;
    this.check = check;
    this.selected = null;
    this.render();
  }

  setOrientation(orientation) {
    this.orientation = orientation;
    this.render();
  }

  flip() {
    this.setOrientation(this.orientation === "white" ? "black" : "white");
  }

  /** Let a person move: `canSelect(square, symbol)` says which pieces they may pick up, and
   * `onMove(from, to)` is called with the squares they point at. null: no input. */
  setInput(input) {
    this.input = input;
    this.selected = null;
    this.render();
  }

  /** Squares to mark as targets of the selected piece: the UCI moves the server allows. */
  setHints(legalUci) {
    this.hints = legalUci ?? [];
    this.render();
  }

  /** The square name at column `col`, row `row` of the drawing (0, 0: top left). */
  squareAt(col, row) {
    if (col < 0 || col > 7 || row < 0 || row > 7) return null;
    const white = this.orientation === "white";
    return `${FILES[white ? col : 7 - col]}${white ? 8 - row : row + 1}`;
  }

  render() {
    const squares = placement(this.fen);
    const mover = sideToMove(this.fen);
    const targets = new Set(
      this.hints.filter((uci) => uci.slice(0, 2) === this.selected).map((uci) => uci.slice(2, 4)),
    );
    const cells = [];
    for (let row = 0; row < 8; row++) {
      for (let col = 0; col < 8; col++) {
        const name = this.squareAt(col, row);
        const x = col * SQUARE;
        const y = row * SQUARE;
        const light = (FILES.indexOf(name[0]) + Number(name[1])) % 2 === 1;
        const group = svg("g", { "data-square": name, class: "square" });
        group.append(svg("rect", { x, y, width: SQUARE, height: SQUARE, class: light ? "light" : "dark" }));
        const symbol = squares[name];
        const marks = [];
        if (this.lastMove && (name === this.lastMove.from || name === this.lastMove.to)) marks.push("last-move");
        if (name === this.selected) marks.push("selected");
        if (this.check && symbol === (mover === "white" ? "K" : "k")) marks.push("check");
        for (const mark of marks) {
          group.append(svg("rect", { x, y, width: SQUARE, height: SQUARE, class: mark }));
        }
        if (col === 0) group.append(this.#label(name[1], x + 2, y + 10, light));
        if (row === 7) group.append(this.#label(name[0], x + SQUARE - 7, y + SQUARE - 3, light));
        if (symbol) {
          group.dataset.piece = symbol;
          group.append(pieceUse(symbol, x, y));
        }
        if (targets.has(name)) {
          const hint = symbol ? svg("circle", { cx: x + 22.5, cy: y + 22.5, r: 20, class: "hint capture" })
            : svg("circle", { cx: x + 22.5, cy: y + 22.5, r: 6, class: "hint" });
          group.append(hint);
        }
        cells.push(group);
      }
    }
    this.svg.replaceChildren(...cells);
    this.svg.dataset.fen = this.fen;
    this.svg.dataset.orientation = this.orientation;
    this.svg.classList.toggle("interactive", this.input !== null);
  }

  #label(text, x, y, light) {
    const label = svg("text", { x, y, class: `coordinate ${light ? "on-light" : "on-dark"}` });
    label.textContent = text;
    return label;
  }

  #squareOfEvent(event) {
    const box = this.svg.getBoundingClientRect();
    const col = Math.floor(((event.clientX - box.left) / box.width) * 8);
    const row = Math.floor(((event.clientY - box.top) / box.height) * 8);
    return this.squareAt(col, row);
  }

  #pointerDown(event) {
    if (this.input === null || event.button > 0) return;
    const square = this.#squareOfEvent(event);
    if (square === null) return;
    const symbol = placement(this.fen)[square];
    const ownPiece = symbol !== undefined && this.input.canSelect(square, symbol);
    if (this.selected !== null && square !== this.selected && !ownPiece) {
      const from = this.selected;
      this.selected = null;
      this.render();
      this.input.onMove(from, square);
      return;
    }
    if (!ownPiece) {
      this.selected = null;
      this.render();
      return;
    }
    event.preventDefault();
    this.selected = square;
    this.press = { square, symbol, x: event.clientX, y: event.clientY, dragging: false, ghost: null };
    this.svg.setPointerCapture?.(event.pointerId);
    this.render();
  }

  #pointerMove(event) {
    const press = this.press;
    if (press === null) return;
    const moved = Math.hypot(event.clientX - press.x, event.clientY - press.y);
    if (!press.dragging && moved < DRAG_THRESHOLD) return;
    press.dragging = true;
    const box = this.svg.getBoundingClientRect();
    const scale = (8 * SQUARE) / box.width;
    const x = (event.clientX - box.left) * scale - SQUARE / 2;
    const y = (event.clientY - box.top) * scale - SQUARE / 2;
    if (press.ghost === null) {
      press.ghost = pieceUse(press.symbol, x, y);
      press.ghost.classList.add("dragged");
      this.svg.querySelector(`[data-square="${press.square}"] .piece`)?.classList.add("lifted");
      this.svg.append(press.ghost);
    }
    press.ghost.setAttribute("x", x);
    press.ghost.setAttribute("y", y);
  }

  #pointerUp(event) {
    const press = this.press;
    if (press === null) return;
    this.#endPress();
    if (!press.dragging) return; // a click: the piece stays selected
    const target = this.#squareOfEvent(event);
    if (target !== null && target !== press.square) {
      this.selected = null;
      this.render();
      this.input?.onMove(press.square, target);
    } else {
      this.render();
    }
  }

  #endPress() {
    this.press?.ghost?.remove();
    this.press = null;
  }
}

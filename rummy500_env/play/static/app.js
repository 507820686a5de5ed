// The Rummy 500 page. The server's engine decides everything: this script draws the view it
// is sent, turns taps into actions in the engine's notation ("dig 7H", "layoff 4H 2"), and
// shows the engine's reason whenever it refuses one. Two modes: play (a game against the
// computer, its id kept in localStorage) and replay (a recorded game, every hand shown).
"use strict";

const SUIT = { C: "♣", D: "♦", H: "♥", S: "♠" };
const SUIT_NAME = { C: "clubs", D: "diamonds", H: "hearts", S: "spades" };
const GAME_KEY = "rummy500.gameId";
// Action kinds the table handles by tapping cards; any other legal kind gets its own button.
const TAPPED = new Set(["draw", "take", "dig", "meld", "layoff", "discard"]);
const LABELS = { decline: "Take nothing (ends the hand)", pass: "Pass", done: "Done" };
const params = new URLSearchParams(location.search);
// A server open to the network needs its secret token (printed at its start, in the URL).
const TOKEN = params.get("token");

const ui = {
  config: null,
  state: null, // the server's view of the game (or of a replay step)
  selected: [], // indices into state.hand
  busy: false, // the computer is playing (or a request is out)
  skipping: false,
  drawWhenFree: false, // the stock was tapped while the computer played: draw on our turn
  pace: 700,
  event: null, // the last move, in words
  flash: [], // cards the last move touched
  message: "",
  replay: null,
  step: 0,
  frames: new Map(),
  timer: null,
};

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// --- cards -----------------------------------------------------------------------------------

function cardEl(
  name,
  { button = false, onclick = null, classes = "", owner = null, mark = null } = {},
) {
  const [face, standsFor] = name.split("=");
  const joker = face === "JK";
  const suit = joker ? "" : face.slice(-1);
  const rank = joker ? "★" : face.slice(0, -1);
  const colour = suit === "D" || suit === "H" ? "red" : "black";
  const label = joker
    ? `joker${standsFor ? ` as ${standsFor}` : ""}`
    : `${rank} of ${SUIT_NAME[suit]}`;
  const flash = ui.flash.includes(face) ? "flash" : "";
  const node = el(
    button ? "button" : "div",
    {
      class: `card ${colour} ${joker ? "joker" : ""} ${flash} ${classes}`.trim(),
      "data-card": face,
      "aria-label": label,
      type: button ? "button" : null,
      onclick,
    },
    el(
      "span",
      { class: "corner" },
      el("span", { class: "rank", text: rank }),
      el("span", { class: "pip", text: joker ? "" : SUIT[suit] }),
    ),
    el("span", { class: "suit", text: joker ? standsFor || "JK" : SUIT[suit] }),
  );
  if (owner !== null)
    node.append(el("span", { class: `owner seat${owner}`, text: ownerTag(owner) }));
  if (mark)
    node.append(el("span", { class: `mark group${mark.group % 6}`, title: markTitle(mark) }));
  return node;
}

function markTitle(mark) {
  return mark.onto === null ? "makes a meld" : `fits meld ${mark.onto + 1} on the table`;
}

function ownerTag(seat) {
  if (ui.replay) return `P${seat}`;
  if (seat === 0) return "You";
  return ui.state.players.length === 2 ? "C" : `C${seat}`;
}

function backs(count, limit = 13) {
  const shown = Math.min(count, limit);
  return el(
    "div",
    { class: "backs", "aria-hidden": "true" },
    Array.from({ length: shown }, () => el("span", { class: "back-mini" })),
  );
}

// --- talking to the server -------------------------------------------------------------------

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (TOKEN) options.headers["X-Rummy500-Token"] = TOKEN;
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch {
    throw new Error(
      "Cannot reach the server: is it still running? Reload the page once it is back.",
    );
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = new Error(
      data && data.error ? data.error : `${response.status} ${response.statusText}`,
    );
    error.status = response.status;
    throw error;
  }
  return data;
}

function gamePath(suffix = "") {
  return `/api/games/${encodeURIComponent(ui.state.id)}${suffix}`;
}

function say(text) {
  ui.message = text;
  renderMessage();
}

function show(state, event = null) {
  ui.state = state;
  ui.selected = [];
  ui.message = "";
  if (event) {
    ui.event = event;
    ui.flash = event.cards || [];
  }
  localStorage.setItem(GAME_KEY, state.id);
  render();
  if (state.waiting === "computer") runComputer();
}

async function send(actions) {
  if (!ui.state) return;
  if (ui.busy) return say("Wait a moment: the computer is playing (or press Skip ahead).");
  if (ui.state.waiting !== "you") return say(waitingReason(ui.state));
  try {
    const reply = await api("POST", gamePath("/actions"), { actions });
    show(reply.state, reply.events[reply.events.length - 1]);
  } catch (error) {
    say(error.message);
  }
}

function waitingReason(s) {
  if (s.waiting === "next_hand") return "The hand is over: press Next hand to deal the next one.";
  if (s.waiting === "game_over") return "The game is over: press New game to play again.";
  return `It is ${nameOf(s.turn)}'s turn.`;
}

function onStock() {
  // A tap on the stock while the computer's moves are still being shown skips them and
  // draws as soon as it is the human's turn (or says why not, if the hand ends first).
  if (ui.busy) {
    ui.skipping = true;
    ui.drawWhenFree = true;
    return say("Skipping ahead to your turn, then drawing from the stock…");
  }
  return send(["draw"]);
}

async function runComputer() {
  if (ui.busy) return;
  ui.busy = true;
  render();
  try {
    while (ui.state.waiting === "computer") {
      if (!ui.skipping && ui.pace > 0) await sleep(ui.pace);
      const reply = await api("POST", gamePath("/advance"));
      ui.state = reply.state;
      ui.selected = [];
      ui.event = reply.event;
      ui.flash = reply.event.cards || [];
      render();
    }
  } catch (error) {
    say(error.message);
  } finally {
    ui.busy = false;
    ui.skipping = false;
    render();
  }
  if (ui.drawWhenFree) {
    ui.drawWhenFree = false;
    if (ui.state.legal.includes("draw")) {
      ui.message = "";
      await send(["draw"]);
    } else say(`Not drawn: ${waitingReason(ui.state)}`);
  }
}

async function newGame() {
  try {
    const reply = await api("POST", "/api/games");
    ui.event = null;
    ui.flash = [];
    show(reply.state);
  } catch (error) {
    say(error.message);
  }
}

async function nextHand() {
  try {
    const reply = await api("POST", gamePath("/next-hand"));
    ui.event = null;
    ui.flash = [];
    show(reply.state);
  } catch (error) {
    say(error.message);
  }
}

// --- what a tap does ---------------------------------------------------------------------------

function selectedCards() {
  return ui.selected.map((i) => ui.state.hand[i]);
}

// A joker is tapped as "JK" but the engine's actions name what it stands for ("JK=6H"):
// the page offers the legal actions whose cards, read as faces, are the ones selected.
const faceOf = (word) => word.split("=")[0];

function layoffsOf(card) {
  // The legal lay-offs of one card: [{action, target}], a joker's once per card it may be.
  return ui.state.legal
    .map((a) => a.split(" "))
    .filter((w) => w[0] === "layoff" && faceOf(w[1]) === card)
    .map((w) => ({ action: w.join(" "), target: Number(w[2]), card: w[1] }));
}

function layoffTargets(card) {
  return [...new Set(layoffsOf(card).map((l) => l.target))];
}

function meldsOf(cards) {
  // The legal melds of exactly these cards (as faces, in any order).
  const want = cards.slice().sort().join(" ");
  return ui.state.legal.filter((a) => {
    const w = a.split(" ");
    return w[0] === "meld" && w.slice(1).map(faceOf).sort().join(" ") === want;
  });
}

function sendOne(actions, what) {
  // One legal action: play it; several (a joker that may stand for more than one card):
  // ask which.
  if (actions.length === 1) return send(actions);
  return choose(
    `Which ${what}?`,
    "The joker can stand for more than one card here.",
    actions.map((a) => ({ label: a.split(" ").slice(1).join(" "), onPick: () => send([a]) })),
  );
}

function onHandCard(index) {
  const at = ui.selected.indexOf(index);
  if (at >= 0) ui.selected.splice(at, 1);
  else ui.selected.push(index);
  ui.message = "";
  render();
}

function onPileCard(index) {
  const s = ui.state;
  const action = s.pile_actions[index];
  // The top card is taken at once; a dig the rules forbid goes to the engine, which says why.
  if (action === "take" || !s.legal.includes(action)) return send([action]);
  const card = s.pile[index];
  const count = s.pile.length - index;
  const above = s.pile.slice(index + 1).join(" ");
  const text =
    `You will pick up ${count} cards: ${card} and the ${count - 1} above it (${above}). ` +
    `${card} must go on the table this turn, in a meld or laid off.`;
  ask(`Dig for ${card}?`, text, `Pick up ${count} cards`, () => send([action]));
}

function onMeldClick(index) {
  if (ui.selected.length !== 1) {
    return say("To lay off, tap one card in your hand, then the meld it goes on.");
  }
  const card = selectedCards()[0];
  const here = layoffsOf(card).filter((l) => l.target === index);
  if (here.length) return sendOne(here.map((l) => l.action), "lay-off");
  if (card === "JK") return say(`The joker cannot be laid off on meld ${index + 1} now.`);
  return send([`layoff ${card} ${index}`]); // the engine says why not
}

function onMeldButton() {
  const cards = selectedCards();
  if (cards.length < 3)
    return say("Select three or more cards that make a set or a run, then press Meld.");
  if (!cards.includes("JK")) return send([`meld ${cards.join(" ")}`]);
  const melds = meldsOf(cards);
  if (melds.length) return sendOne(melds, "meld");
  return say(`${cards.join(" ")} make no meld you may put down now.`);
}

function onLayoffButton() {
  const cards = selectedCards();
  if (cards.length !== 1) {
    return say(
      "Select one card to lay off, then tap the meld it goes on (the melds it fits light up).",
    );
  }
  const card = cards[0];
  const targets = layoffTargets(card);
  if (targets.length === 1)
    return sendOne(
      layoffsOf(card).map((l) => l.action),
      "lay-off",
    );
  if (targets.length > 1)
    return say(`${card} fits ${targets.length} melds: tap the one to lay it off on.`);
  if (card === "JK") return say("The joker fits no meld on the table now.");
  const fitting = ui.state.melds.findIndex((m) => m.fits.includes(card));
  if (fitting >= 0 || ui.state.waiting !== "you" || ui.state.phase !== "play") {
    return send([`layoff ${card} ${Math.max(fitting, 0)}`]); // the engine says why not
  }
  return say(
    ui.state.melds.length
      ? `${card} does not fit any meld on the table.`
      : "There are no melds on the table yet.",
  );
}

function onDiscardButton() {
  const cards = selectedCards();
  if (cards.length !== 1) return say("Select the one card to discard, then press Discard.");
  return send([`discard ${cards[0]}`]);
}

function onPutDownAll() {
  const s = ui.state;
  if (s.plan.length) return send(s.plan);
  if (s.waiting !== "you") return say("Wait for your turn.");
  if (s.phase === "draw")
    return say("Draw first; then Put down all places every meld and lay-off you can make.");
  return say("Nothing in your hand makes a meld or fits a meld on the table.");
}

function onNewGame() {
  const s = ui.state;
  if (!s || s.waiting === "game_over") return newGame();
  return ask("Start a new game?", "This game will be left unfinished.", "New game", newGame);
}

// The dialog with one button per option (and Cancel): `onPick` of the one tapped runs.
function choose(title, text, options) {
  ask(title, text, null, null);
  const buttons = document.querySelector(".dialog-buttons");
  for (const option of options) {
    buttons.insertBefore(
      el("button", {
        class: "primary choice",
        "data-testid": "choice",
        text: option.label,
        onclick: () => {
          $("dialog-cancel").click();
          option.onPick();
        },
      }),
      $("dialog-cancel"),
    );
  }
  buttons.querySelector(".choice").focus();
}

// A small confirmation dialog: `onConfirm` runs only if the player confirms (no confirm
// button when `confirmLabel` is null: `choose` adds its own).
function ask(title, text, confirmLabel, onConfirm) {
  $("dialog-title").textContent = title;
  $("dialog-text").textContent = text;
  $("dialog-confirm").textContent = confirmLabel || "";
  $("dialog-confirm").hidden = confirmLabel === null;
  const box = $("dialog");
  box.hidden = false;
  const onKey = (e) => {
    if (e.key === "Escape") close();
  };
  const close = () => {
    box.hidden = true;
    $("dialog-confirm").onclick = null;
    for (const b of document.querySelectorAll(".dialog-buttons .choice")) b.remove();
    document.removeEventListener("keydown", onKey);
  };
  document.addEventListener("keydown", onKey);
  $("dialog-cancel").onclick = close;
  $("dialog-confirm").onclick = () => {
    close();
    onConfirm();
  };
  if (confirmLabel !== null) $("dialog-confirm").focus();
}

// --- drawing the page --------------------------------------------------------------------------

function render() {
  const s = ui.state;
  if (!s) return;
  renderScores(s);
  renderPlayers(s);
  renderTable(s);
  renderStatus(s);
  renderMessage();
  renderResult(s);
  if (!ui.replay) {
    renderHand(s);
    renderControls(s);
  }
  renderLog(s);
}

function nameOf(seat) {
  return ui.state.players[seat].name;
}

function renderScores(s) {
  const r = s.result; // once the hand is over, the totals include it
  const chips = s.players.map((p) =>
    el(
      "div",
      {
        class: `score seat${p.seat} ${s.turn === p.seat && !r ? "to-act" : ""}`,
        "data-testid": `score-${p.seat}`,
      },
      el("span", { class: "who", text: p.name }),
      el("strong", { text: String(r ? r.totals[p.seat] : p.total) }),
      el("span", {
        class: "table-points",
        text: r
          ? `${r.scores[p.seat] >= 0 ? "+" : ""}${r.scores[p.seat]} this hand`
          : `+${p.table_points} on the table`,
      }),
    ),
  );
  const info = el("div", {
    class: "score-info",
    text: `Hand ${s.hand_number} · to ${s.rules.target}`,
  });
  $("scores").replaceChildren(...chips, info);
}

function renderPlayers(s) {
  const seats = ui.replay ? s.players : s.players.filter((p) => p.seat !== 0);
  $("players").replaceChildren(
    ...seats.map((p) => {
      const known = new Set(p.known);
      const cards = p.hand
        ? el(
            "div",
            { class: "hand small", "data-testid": `hand-${p.seat}` },
            p.hand.map((c) => cardEl(c, { classes: known.has(c) ? "known" : "" })),
          )
        : backs(p.hand_size);
      const knownRow =
        !p.hand && p.known.length
          ? el(
              "div",
              { class: "known-row" },
              el("span", { class: "label", text: "Known from the pile:" }),
              el(
                "div",
                { class: "hand small" },
                p.known.map((c) => cardEl(c)),
              ),
            )
          : null;
      return el(
        "div",
        {
          class: `player seat${p.seat} ${s.turn === p.seat && !s.result ? "to-act" : ""}`,
          "data-testid": `player-${p.seat}`,
        },
        el(
          "div",
          { class: "player-head" },
          el("strong", { text: p.name }),
          el("span", {
            class: "count",
            text: cardCount(p),
          }),
        ),
        cards,
        knownRow,
      );
    }),
  );
}

function cardCount(p) {
  const count = `${p.hand_size} card${p.hand_size === 1 ? "" : "s"}`;
  return p.hand && p.known.length
    ? `${count} (${p.known.length} known from the pile, ringed blue)`
    : count;
}

function renderTable(s) {
  const mine = !ui.replay && ui.selected.length === 1 ? selectedCards()[0] : null;
  const lit = new Set(
    mine === null
      ? []
      : s.waiting === "you"
        ? layoffTargets(mine)
        : s.melds.flatMap((m, i) => (m.fits.includes(mine) ? [i] : [])),
  );
  const melds = s.melds.map((m, i) =>
    el(
      "div",
      {
        class: `meld ${lit.has(i) ? "fits" : ""}`,
        "data-testid": `meld-${i}`,
        role: ui.replay ? null : "button",
        "aria-label": `meld ${i + 1}: ${m.cards.join(" ")}`,
        onclick: ui.replay ? null : () => onMeldClick(i),
      },
      m.cards.map((c, k) => cardEl(c, { owner: m.owners[k] })),
    ),
  );
  $("melds").replaceChildren(
    ...(melds.length ? melds : [el("p", { class: "empty", text: "No melds on the table yet." })]),
  );

  const stock = $("stock");
  stock.replaceChildren(
    el("span", { class: "back-card" }),
    el("span", { class: "stock-count", text: `${s.stock}` }),
  );
  stock.setAttribute("aria-label", `Stock: ${s.stock} cards`);
  stock.title = `Stock: ${s.stock} cards`;
  stock.classList.toggle("can-take", s.legal ? s.legal.includes("draw") : false);

  const drawing = !ui.replay && s.waiting === "you" && s.phase === "draw";
  $("pile").replaceChildren(
    ...s.pile.map((c, i) => {
      const action = s.pile_actions[i];
      const allowed = drawing && s.legal.includes(action);
      return cardEl(c, {
        button: !ui.replay,
        onclick: ui.replay ? null : () => onPileCard(i),
        classes: drawing ? (allowed ? "can-take" : "cannot") : "",
      });
    }),
  );
}

function renderStatus(s) {
  const last = ui.event ? ui.event.text : "";
  let prompt = "";
  if (ui.replay) prompt = "";
  else if (s.waiting === "you" && s.phase === "draw") {
    prompt =
      "Your turn: tap the stock to draw, or a pile card to take it with every card above it.";
  } else if (s.waiting === "you" && s.must_play) {
    prompt = `Put ${s.must_play} on the table this turn (meld it or lay it off), then discard.`;
  } else if (s.waiting === "you") {
    prompt = "Meld or lay off if you like, then discard to end your turn.";
  } else if (s.waiting === "computer") prompt = `${nameOf(s.turn)} is playing…`;
  else if (s.waiting === "next_hand") prompt = "The hand is over: the scores are below.";
  else if (s.waiting === "game_over") prompt = "The game is over.";
  $("status").replaceChildren(last ? el("strong", { text: `${last}. ` }) : "", prompt);
}

function renderMessage() {
  const box = $("message");
  box.textContent = ui.message;
  box.hidden = !ui.message;
}

function renderResult(s) {
  const box = $("result");
  const r = s.result;
  box.hidden = !r;
  if (!r) return box.replaceChildren();
  let title = `Hand ${s.hand_number} is over`;
  if (r.went_out !== null) title += `: ${nameOf(r.went_out)} went out`;
  if (r.game_over) {
    const best = Math.max(...r.totals);
    if (r.winner === null) {
      title = `The game ends in a draw at ${best}`;
    } else {
      const who = r.winner === 0 && !ui.replay ? "You win" : `${nameOf(r.winner)} wins`;
      title = `${who} with ${r.totals[r.winner]}!`;
    }
  }
  const rows = s.players.map((p, q) =>
    el(
      "tr",
      {},
      el("th", { text: p.name }),
      el("td", { text: `${r.table[q]}` }),
      el("td", { text: r.penalty[q] ? `-${r.penalty[q]}` : "0" }),
      el("td", { text: `${r.scores[q] > 0 ? "+" : ""}${r.scores[q]}` }),
      el("td", { class: "total", text: `${r.totals[q]}` }),
    ),
  );
  const table = el(
    "table",
    {},
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ["", "On the table", "Left in hand", "This hand", "Total"].map((h) =>
          el("th", { text: h }),
        ),
      ),
    ),
    el("tbody", {}, rows),
  );
  const held = ui.replay
    ? []
    : s.players
        .filter((p) => p.seat !== 0 && p.hand && p.hand.length)
        .map((p) =>
          el(
            "div",
            { class: "held" },
            el("span", { text: `${p.name} held:` }),
            el(
              "div",
              { class: "hand small" },
              p.hand.map((c) => cardEl(c)),
            ),
          ),
        );
  const buttons = [];
  if (!ui.replay && s.waiting === "next_hand") {
    buttons.push(
      el("button", {
        class: "primary",
        "data-testid": "next-hand",
        onclick: nextHand,
        text: "Next hand",
      }),
    );
  }
  if (!ui.replay && s.waiting === "game_over") {
    buttons.push(
      el("button", {
        class: "primary",
        "data-testid": "play-again",
        onclick: newGame,
        text: "Play again",
      }),
    );
    if (s.record_url)
      buttons.push(
        el("a", {
          href: TOKEN ? `${s.record_url}?token=${encodeURIComponent(TOKEN)}` : s.record_url,
          download: `rummy500-${s.id}.json`,
          text: "Download the game record",
        }),
      );
  }
  box.replaceChildren(
    el("h2", { text: title }),
    table,
    ...held,
    el("div", { class: "result-buttons" }, buttons),
  );
}

function renderHand(s) {
  const marks = s.marks || [];
  $("hand").replaceChildren(
    ...s.hand.map((c, i) =>
      cardEl(c, {
        button: true,
        onclick: () => onHandCard(i),
        classes: `${ui.selected.includes(i) ? "selected" : ""} ${c === s.must_play ? "must" : ""}`,
        mark: marks[i],
      }),
    ),
  );
}

function renderControls(s) {
  const mine = s.waiting === "you";
  const cards = selectedCards();
  const legal = new Set(s.legal);
  const ready = {
    "meld-button": mine && cards.length >= 3,
    "layoff-button": mine && cards.length === 1 && layoffTargets(cards[0]).length > 0,
    "discard-button": mine && cards.length === 1 && legal.has(`discard ${cards[0]}`),
    "put-down-all": mine && s.plan.length > 0,
  };
  for (const [id, on] of Object.entries(ready)) $(id).classList.toggle("ready", on);
  const extra = [...new Set(s.legal.filter((a) => !TAPPED.has(a.split(" ")[0])))];
  $("more-actions").replaceChildren(
    ...extra.map((a) => {
      const kind = a.split(" ")[0];
      return el("button", {
        class: "ready",
        "data-testid": `action-${kind}`,
        onclick: () => send([a]),
        text: LABELS[kind] || a,
      });
    }),
  );
  $("skip").hidden = !ui.busy;
  $("controls").classList.toggle("idle", !mine);
  $("new-game").classList.toggle("primary", s.waiting === "game_over");
}

function renderLog(s) {
  const entries = ui.replay ? replayLog() : s.log;
  $("log").replaceChildren(
    ...entries
      .slice()
      .reverse()
      .map((e) => el("li", { class: `seat${e.seat}`, text: e.text })),
  ); // latest first
}

// --- replay ------------------------------------------------------------------------------------

function replayLog() {
  const steps = ui.replay.steps;
  const here = steps[ui.step];
  const out = [];
  for (let i = ui.step; i >= 0 && steps[i].hand === here.hand && steps[i].step > 0; i--)
    out.unshift({ seat: steps[i].player, text: steps[i].text });
  return out.slice(-40);
}

async function startReplay() {
  ui.replay = await api("GET", "/api/replay");
  document.body.classList.add("replay");
  $("mine").hidden = true;
  $("replay-controls").hidden = false;
  $("subtitle").textContent = `Replay of ${ui.replay.file}: ${ui.replay.players.join(" vs ")}`;
  $("log-box").querySelector("summary").textContent = "Moves this hand, latest first";
  const slider = $("replay-slider");
  slider.max = String(ui.replay.steps.length - 1);
  slider.addEventListener("input", () => goTo(Number(slider.value)));
  $("replay-start").onclick = () => goTo(0);
  $("replay-prev").onclick = () => goTo(ui.step - 1);
  $("replay-next").onclick = () => goTo(ui.step + 1);
  $("replay-end").onclick = () => goTo(ui.replay.steps.length - 1);
  $("replay-play").onclick = togglePlay;
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement && e.key !== " ") return;
    const moves = { ArrowLeft: -1, ArrowRight: 1 };
    if (e.key in moves) goTo(ui.step + moves[e.key]);
    else if (e.key === "Home") goTo(0);
    else if (e.key === "End") goTo(ui.replay.steps.length - 1);
    else if (e.key === " ") togglePlay();
    else return;
    e.preventDefault();
  });
  await goTo(0);
}

async function goTo(index) {
  const last = ui.replay.steps.length - 1;
  const i = Math.min(Math.max(index, 0), last);
  ui.step = i;
  let frame = ui.frames.get(i);
  if (!frame) {
    try {
      frame = await api("GET", `/api/replay/frames/${i}`);
    } catch (error) {
      return say(error.message);
    }
    ui.frames.set(i, frame);
  }
  if (ui.step !== i) return; // a later step was asked for meanwhile
  ui.state = frame.state;
  ui.event = frame.step.text ? { text: frame.step.text } : null;
  ui.flash = frame.step.cards || [];
  $("replay-slider").value = String(i);
  const step = ui.replay.steps[i];
  const hand = ui.replay.hands[step.hand];
  $("replay-step").textContent =
    `Hand ${step.hand + 1} of ${ui.replay.hands.length} · move ${step.step} of ${hand.actions}` +
    ` · step ${i} of ${last}`;
  render();
  if (i === last && ui.timer) togglePlay();
}

function togglePlay() {
  if (ui.timer) {
    clearInterval(ui.timer);
    ui.timer = null;
  } else {
    if (ui.step >= ui.replay.steps.length - 1) goTo(0);
    ui.timer = setInterval(() => goTo(ui.step + 1), Math.max(ui.pace, 150));
  }
  $("replay-play").textContent = ui.timer ? "Pause" : "Play";
}

// --- start -------------------------------------------------------------------------------------

function bindPlayControls() {
  $("new-game").hidden = false;
  $("new-game").onclick = onNewGame;
  $("stock").onclick = onStock;
  $("meld-button").onclick = onMeldButton;
  $("layoff-button").onclick = onLayoffButton;
  $("discard-button").onclick = onDiscardButton;
  $("put-down-all").onclick = onPutDownAll;
  $("skip").onclick = () => {
    ui.skipping = true;
  };
}

async function start() {
  try {
    ui.config = await api("GET", "/api/config");
  } catch (error) {
    return say(`Cannot reach the server: ${error.message}`);
  }
  ui.pace = params.has("pace") ? Number(params.get("pace")) : ui.config.pace_ms || 700;
  if (ui.config.mode === "replay") return startReplay();
  $("subtitle").textContent = `against ${ui.config.opponent}`;
  bindPlayControls();
  const id = localStorage.getItem(GAME_KEY);
  if (id) {
    try {
      const reply = await api("GET", `/api/games/${encodeURIComponent(id)}`);
      return show(reply.state);
    } catch (error) {
      if (error.status !== 404) return say(`${error.message} Press New game to start another.`);
    }
  }
  return newGame();
}

start();

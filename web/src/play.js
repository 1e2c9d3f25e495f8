// The player's page: sign in with a player token, pick a room, play hands. Everything it
// shows comes from the suite's TableService over gRPC-Web (the client protoc-gen-es
// generates from protos/, web/gen), called with the player's own token: the page sees
// what the table gives this seat, and nothing else. Built by tools/build_play_web.py.
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { TableService } from "@gen/ddz/v1/table_pb.js";
import { HandPhase } from "@gen/ddz/v1/rules_pb.js";
import {
  BidAction, BidMadeSchema, MoveBy, PassedSchema, PlayMadeSchema, Side, TurnTimedOutSchema,
} from "@gen/ddz/v1/hand_events_pb.js";

const RANKS = "3456789TJQKA2BR"; // rank notation (RULES.md §1): Rank enum value - 1
const SHOWN = { T: "10", B: "Joker", R: "JOKER" };
const SUITS = { S: "♠", H: "♥", C: "♣", D: "♦", "*": "★" };
const RED = new Set(["H", "D", "*", "R"]);
const KEY = { token: "ddz.play.token", room: "ddz.play.room" };
const RETRY_MS = 1000;

const table = createClient(TableService, createGrpcWebTransport({ baseUrl: location.origin }));
const $ = (id) => document.getElementById(id);

const state = {
  token: localStorage.getItem(KEY.token) || "",
  seatToken: "",
  roomId: "",
  tableId: "",
  seat: 0,
  handId: "",
  view: null,
  position: 0n,
  selected: new Set(),
  focus: 0,
  lastMove: {}, // seat -> what it did last, in words
  watching: 0, // the stream's generation: a new hand stops the old stream's loop
  deadline: 0, // ms (page clock) when the turn runs out
  lost: false, // the stream broke: reconnecting
  hinted: null, // the last hint's play (its cards and reading)
  cut: null, // aborts the stream when the browser says the network is gone
};

// --- words ------------------------------------------------------------------------

const symbol = (rank) => RANKS[rank - 1] || "?";
const cardValue = (card) => {
  const s = symbol(card.rank);
  return s === "B" ? "BJ" : s === "R" ? "RJ" : `${s}${card.suit}`;
};
const cardKey = (card) => `${cardValue(card)}.${card.copy}`;
const ranksText = (cards) => cards.map((c) => SHOWN[symbol(c.rank)] || symbol(c.rank)).join(" ");
const seatName = (view, seat) => {
  const info = view.seats[seat];
  const name = info ? info.playerId : `seat ${seat}`;
  return info && info.isBot ? `${name} (bot)` : name;
};
const bidWords = (bid) => {
  if (bid.action === BidAction.CALL) return bid.score ? `call ${bid.score}` : "call the landlord";
  if (bid.action === BidAction.GRAB) return "grab the landlord";
  return bid.action === BidAction.PASS ? "no bid" : "bid";
};
const byBot = (actedBy) =>
  actedBy === MoveBy.BOT_TURN_TIMEOUT ? " (time ran out: the bot)" :
  actedBy === MoveBy.BOT_AUTO_PLAY ? " (auto-play)" : "";

function explain(error) {
  if (error instanceof ConnectError) return error.rawMessage || error.message;
  return String(error && error.message ? error.message : error);
}

function say(text) {
  const notice = $("notice");
  notice.textContent = text;
  notice.hidden = !text;
}

function refuse(error) {
  const refusal = $("refusal");
  refusal.textContent = error ? explain(error) : "";
  refusal.hidden = !error;
}

const auth = (token) => ({ headers: { authorization: `Bearer ${token}` } });

// --- screens ------------------------------------------------------------------------

function show(screen) {
  for (const id of ["signin", "rooms", "table"]) $(id).hidden = id !== screen;
  $("who").hidden = screen === "signin";
}

async function showRooms() {
  show("rooms");
  $("waiting").hidden = true;
  const list = $("room-list");
  try {
    const answer = await table.listRooms({});
    list.replaceChildren(...answer.rooms.map((room) => {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = `Join ${room.name}`;
      button.dataset.room = room.roomId;
      button.addEventListener("click", () => join(room.roomId));
      const about = document.createElement("span");
      about.textContent = ` ${room.variant}; ${room.queued} waiting, ${room.tables} tables`;
      item.append(button, about);
      return item;
    }));
  } catch (error) {
    say(`The suite did not answer: ${explain(error)}. Reload the page to try again.`);
  }
}

async function join(roomId) {
  say("");
  $("waiting").hidden = false;
  try {
    const joined = await table.joinRoom({ roomId }, { ...auth(state.token), timeoutMs: 90_000 });
    localStorage.setItem(KEY.room, roomId);
    Object.assign(state, {
      roomId, seatToken: joined.token, tableId: joined.table.tableId, seat: joined.seat,
    });
    $("table-room").textContent = `${roomId} (${joined.table.tableId})`;
    if (joined.rejoined) say("You are back at your seat.");
    follow(joined.handId);
  } catch (error) {
    $("waiting").hidden = true;
    if (error instanceof ConnectError && error.code === 16) return signOut(explain(error));
    say(`Could not join: ${explain(error)}`);
  }
}

function signOut(why = "") {
  localStorage.removeItem(KEY.token);
  localStorage.removeItem(KEY.room);
  state.token = "";
  state.watching += 1;
  show("signin");
  offerGuests();
  say(why ? `Sign in again: ${why}` : "");
}

// --- the hand -----------------------------------------------------------------------

function follow(handId) {
  Object.assign(state, { handId, view: null, position: 0n, lastMove: {} });
  state.selected.clear();
  $("hand-id").textContent = handId;
  $("evidence").hidden = true;
  $("evidence-help").hidden = true;
  $("result").hidden = true;
  $("timed-out").hidden = true;
  refuse(null);
  show("table");
  watch(++state.watching);
}

async function watch(generation) {
  while (generation === state.watching) {
    try {
      if (!navigator.onLine) throw new Error("offline");
      if (state.lost) {
        // Back: the seat's view as of now (a stream brings only what happens next).
        const now = await table.getView({ handId: state.handId, seat: state.seat }, auth(state.seatToken));
        if (generation !== state.watching) return;
        render(now.view);
        state.lost = false;
        say("Connected again: you are at your seat.");
      }
      state.cut = new AbortController();
      const stream = table.watchHand(
        { handId: state.handId, seat: state.seat, afterPosition: state.position },
        { ...auth(state.seatToken), signal: state.cut.signal },
      );
      for await (const update of stream) {
        if (generation !== state.watching) return;
        state.position = update.position;
        if (update.event) note(update.event);
        if (update.view) render(update.view);
      }
      if (state.view && state.view.phase === HandPhase.ENDED) return;
    } catch (error) {
      if (generation !== state.watching) return;
      if (error instanceof ConnectError && [7, 16].includes(error.code)) {
        return say(`This seat is no longer yours: ${explain(error)}`);
      }
      state.lost = true;
      say("Connection lost: reconnecting to your seat…");
      await new Promise((done) => setTimeout(done, RETRY_MS));
      continue;
    }
  }
}

function note(event) {
  const decoders = {
    play_made: [PlayMadeSchema, (e) => `played ${ranksText(e.cards)}${byBot(e.actedBy)}`],
    passed: [PassedSchema, (e) => `passed${byBot(e.actedBy)}`],
    bid_made: [BidMadeSchema, (e) => `${bidWords(e)}${byBot(e.actedBy)}`],
    turn_timed_out: [TurnTimedOutSchema, null],
  };
  const found = decoders[event.type];
  if (!found) return;
  const payload = fromBinary(found[0], event.payload);
  if (found[1]) state.lastMove[payload.seat] = found[1](payload);
  else if (payload.seat === state.seat) $("timed-out").hidden = false;
  if (found[1] && payload.seat === state.seat && payload.actedBy === MoveBy.PLAYER) {
    $("timed-out").hidden = true;
  }
}

function render(view) {
  // A move's answer may come before the stream's updates up to it: never step back.
  const now = state.view;
  if (now && now.handId === view.handId && view.version < now.version) return;
  if (!now || now.version !== view.version) $("hint").textContent = "";
  state.view = view;
  $("table").dataset.version = String(view.version);
  const wild = new Set(view.wild.map(symbol));
  renderSeats(view);
  renderCards(view, wild);
  renderMiddle(view, wild);
  renderActions(view);
  if (view.phase === HandPhase.ENDED) renderResult(view);
}

function renderSeats(view) {
  const boxes = view.seats.map((info, seat) => {
    const box = document.createElement("article");
    box.dataset.testid = `seat-${seat}`;
    box.className = "seat" + (seat === state.seat ? " me" : "") + (view.turn === seat ? " turn" : "");
    const role = view.landlord === undefined ? "" : view.landlord === seat ? "landlord" : "farmer";
    const lines = [
      [`${seatName(view, seat)}${seat === state.seat ? " (you)" : ""}`, "name"],
      [role ? role : "bidding…", "role"],
      [`${view.cardCounts[seat] ?? 0} cards left`, "count"],
      [state.lastMove[seat] || "", "last"],
    ];
    if (view.autoPlay.includes(seat)) lines.push(["auto-play", "flag"]);
    if (view.disconnected.includes(seat)) lines.push(["away: the bot plays", "flag"]);
    for (const [text, kind] of lines) {
      const line = document.createElement("p");
      line.className = kind;
      line.textContent = text;
      box.append(line);
    }
    const shown = view.shown.find((s) => s.seat === seat && seat !== state.seat);
    if (shown) box.append(cardRow(shown.cards, new Set(), "small"));
    return box;
  });
  $("seats").replaceChildren(...boxes);
}

function cardFace(card, wild) {
  const s = symbol(card.rank);
  const face = document.createElement("span");
  face.className = "face" + (RED.has(card.suit) || s === "R" ? " red" : "") + (wild.has(s) ? " wild" : "") +
    (s === "B" || s === "R" ? " joker" : "");
  face.textContent = s === "B" || s === "R" ? SHOWN[s] : `${SHOWN[s] || s}${SUITS[card.suit] || ""}`;
  if (wild.has(s)) face.title = "wildcard rank";
  return face;
}

function cardRow(cards, wild, size) {
  const row = document.createElement("span");
  row.className = `cards ${size}`;
  row.append(...cards.map((card) => cardFace(card, wild)));
  return row;
}

function renderCards(view, wild) {
  const mine = $("my-cards");
  const keys = new Set(view.cards.map(cardKey));
  for (const key of [...state.selected]) if (!keys.has(key)) state.selected.delete(key);
  state.focus = Math.min(state.focus, Math.max(0, view.cards.length - 1));
  mine.replaceChildren(...view.cards.map((card, index) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "card" + (state.selected.has(cardKey(card)) ? " selected" : "");
    button.dataset.card = cardValue(card);
    button.dataset.key = cardKey(card);
    button.tabIndex = index === state.focus ? 0 : -1;
    button.setAttribute("aria-pressed", String(state.selected.has(cardKey(card))));
    button.append(cardFace(card, wild));
    if (wild.has(symbol(card.rank))) button.append(Object.assign(document.createElement("small"), { textContent: "wild" }));
    button.addEventListener("click", () => { state.focus = index; toggle(card); });
    return button;
  }));
}

function toggle(card) {
  const key = cardKey(card);
  if (state.selected.has(key)) state.selected.delete(key);
  else state.selected.add(key);
  renderCards(state.view, new Set(state.view.wild.map(symbol)));
  focusCard();
}

function focusCard() {
  const buttons = $("my-cards").querySelectorAll("button");
  if (buttons[state.focus]) buttons[state.focus].focus();
}

function renderMiddle(view, wild) {
  const phase = { [HandPhase.BIDDING]: "Bidding", [HandPhase.PLAYING]: "Playing", [HandPhase.ENDED]: "The hand is over" };
  const turn = view.turn === undefined ? "" : view.turn === state.seat ? ": your turn" : `: ${seatName(view, view.turn)}'s turn`;
  $("phase").textContent = `${phase[view.phase] || "Dealing"}${view.phase === HandPhase.ENDED ? "" : turn}`;
  $("bottom-line").hidden = view.bottom.length === 0;
  $("bottom").replaceChildren(cardRow(view.bottom, wild, "small"));
  $("wild-line").hidden = wild.size === 0;
  $("wild").textContent = [...wild].map((s) => SHOWN[s] || s).join(", ");
  $("trick-line").hidden = !view.trick || view.phase !== HandPhase.PLAYING;
  if (view.trick) $("trick").replaceChildren(cardRow(view.trick.cards, wild, "small"));
  const factors = view.multiplier ? view.multiplier.factors : [];
  $("multiplier").textContent = `×${view.multiplierTotal}`;
  $("factors").replaceChildren(...factors.map((f) => {
    const item = document.createElement("li");
    item.textContent = `${f.reason.replaceAll("_", " ")} ×${f.factor}${f.detail ? ` (${f.detail})` : ""}`;
    return item;
  }));
  $("autoplay").hidden = !view.autoPlay.includes(state.seat);
  // The clock: counted down from the seconds left as of the view, on this page's clock.
  const clock = $("clock");
  if (view.turnDeadline && view.turn !== undefined && view.phase !== HandPhase.ENDED) {
    state.deadline = performance.now() + view.turnSecondsLeft * 1000;
    clock.dataset.deadline = timestampDate(view.turnDeadline).toISOString();
    clock.dataset.seat = String(view.turn);
    $("clock-line").hidden = false;
  } else {
    state.deadline = 0;
    $("clock-line").hidden = true;
    delete clock.dataset.deadline;
  }
  tick();
}

function tick() {
  const clock = $("clock");
  if (!state.deadline || !state.view) return;
  const left = Math.max(0, Math.ceil((state.deadline - performance.now()) / 1000));
  const whose = state.view.turn === state.seat ? "Your turn" : `${seatName(state.view, state.view.turn)}'s turn`;
  clock.textContent = String(left);
  $("clock-whose").textContent = `${whose}:`;
  clock.className = left <= 5 ? "urgent" : "";
}
setInterval(tick, 250);

function renderActions(view) {
  const playing = view.phase === HandPhase.PLAYING && view.myTurn;
  $("play-button").disabled = !playing;
  $("pass-button").disabled = !(playing && view.canPass);
  $("hint-button").disabled = !view.myTurn;
  $("show-button").hidden = !view.canShow;
  const bids = view.phase === HandPhase.BIDDING && view.myTurn ? view.legalBids : [];
  $("bids").replaceChildren(...bids.map((bid) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = bid.action === BidAction.PASS ? "No bid" : bidWords(bid).replace(/^./, (c) => c.toUpperCase());
    button.dataset.bid = `${bid.action}:${bid.score}`;
    button.addEventListener("click", () => act(() => table.bid({ ...seatIds(), action: bid.action, score: bid.score }, auth(state.seatToken))));
    return button;
  }));
}

function renderResult(view) {
  state.deadline = 0;
  $("clock-line").hidden = true;
  $("result").hidden = false;
  const side = { [Side.LANDLORD]: "The landlord wins", [Side.FARMERS]: "The farmers win" };
  const mine = view.landlord === state.seat ? Side.LANDLORD : Side.FARMERS;
  const won = view.winner === mine;
  $("result-title").textContent = `${side[view.winner] || "No winner"}${view.winner ? (won ? ": you won" : ": you lost") : ""}`;
  const deltas = view.ledger ? view.ledger.deltas : [];
  $("ledger").replaceChildren(...view.seats.map((_, seat) => {
    const row = document.createElement("tr");
    const left = view.finalHands[seat] ? ranksText(view.finalHands[seat].cards) : "";
    const delta = deltas.length ? deltas[seat] : null;
    for (const text of [String(seat), seatName(view, seat), delta === null ? "settling…" : `${delta > 0n ? "+" : ""}${delta}`, left || "—"]) {
      row.append(Object.assign(document.createElement("td"), { textContent: text }));
    }
    return row;
  }));
  const factors = view.multiplier ? view.multiplier.factors.map((f) => `${f.factor}`).join(" × ") : "1";
  const multiplier = view.ledger ? view.ledger.multiplier : view.multiplierTotal;
  $("arithmetic").textContent = view.ledger
    ? `Stake: base ${view.base} × multiplier ${multiplier} (${factors}) = ${BigInt(view.base) * multiplier}. ` +
      `What each seat got by the room's terms (points or beans, fees), line by line:`
    : "Settling the hand…";
  $("ledger-lines").replaceChildren(...(view.ledger ? view.ledger.lines : []).map((line) => {
    const who = line.seat === undefined ? "system" : seatName(view, line.seat);
    return Object.assign(document.createElement("li"), {
      textContent: `${who}: ${line.amount > 0n ? "+" : ""}${line.amount} ${line.reason.replaceAll("_", " ")}${line.detail ? ` (${line.detail})` : ""}`,
    });
  }));
  $("evidence").hidden = false;
  $("evidence-help").hidden = false;
  $("evidence-name").textContent = `hand-${view.handId}.ddz-evidence.json`;
}

async function downloadEvidence() {
  refuse(null);
  try {
    const found = await table.getHandEvidence({ handId: state.handId }, auth(state.token));
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([found.file], { type: "application/json" }));
    link.download = found.fileName;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
  } catch (error) {
    refuse(error);
  }
}

// --- moves --------------------------------------------------------------------------

const seatIds = () => ({ handId: state.handId, seat: state.seat });

async function act(call) {
  refuse(null);
  $("table").dataset.busy = "1"; // a move in flight (tests wait for its answer)
  try {
    const answer = await call();
    if (answer && answer.outcome && answer.outcome.view) {
      state.selected.clear();
      render(answer.outcome.view);
    }
  } catch (error) {
    refuse(error);
  } finally {
    $("table").dataset.busy = "0";
  }
}

function selectedCards() {
  return state.view.cards.filter((c) => state.selected.has(cardKey(c))).map((c) => symbol(c.rank)).join("");
}

async function hint() {
  refuse(null);
  try {
    const answer = await table.hint(seatIds(), auth(state.seatToken));
    const move = answer.move;
    if (move.move.case === "play") {
      state.hinted = move.move.value;
      const wanted = [...move.move.value.cards];
      state.selected.clear();
      for (const card of state.view.cards) {
        const at = wanted.indexOf(symbol(card.rank));
        if (at >= 0) { wanted.splice(at, 1); state.selected.add(cardKey(card)); }
      }
      renderCards(state.view, new Set(state.view.wild.map(symbol)));
    }
    $("hint").textContent = `Hint: ${move.text}`;
  } catch (error) {
    refuse(error);
  }
}

// The hint's reading goes with its cards (a wildcard play may read several ways, §3).
const sorted = (text) => [...text].sort().join("");
const play = () => {
  const cards = selectedCards();
  const hinted = state.hinted && sorted(state.hinted.cards) === sorted(cards) ? state.hinted.declared : undefined;
  return act(() => table.play({ ...seatIds(), cards, declared: hinted }, auth(state.seatToken)));
};
const pass = () => act(() => table.pass(seatIds(), auth(state.seatToken)));

$("play-button").addEventListener("click", play);
$("evidence").addEventListener("click", downloadEvidence);
$("pass-button").addEventListener("click", pass);
$("hint-button").addEventListener("click", hint);
$("clear-button").addEventListener("click", () => { state.selected.clear(); render(state.view); });
$("show-button").addEventListener("click", () => act(() => table.showCards(seatIds(), auth(state.seatToken))));
$("resume").addEventListener("click", () => act(() => table.resume(seatIds(), auth(state.seatToken))));
$("next-hand").addEventListener("click", async () => {
  refuse(null);
  say("Waiting for the others to be ready…");
  try {
    const next = await table.nextHand({ tableId: state.tableId }, { ...auth(state.seatToken), timeoutMs: 120_000 });
    say("");
    follow(next.handId);
  } catch (error) {
    say(`No next hand: ${explain(error)}`);
  }
});
$("leave").addEventListener("click", async () => {
  try {
    await table.leaveRoom({ roomId: state.roomId }, auth(state.token));
  } catch (error) {
    say(`Leaving: ${explain(error)}`);
  }
  localStorage.removeItem(KEY.room);
  state.watching += 1;
  showRooms();
});
$("my-cards").addEventListener("keydown", (event) => {
  const count = state.view ? state.view.cards.length : 0;
  if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
    state.focus = (state.focus + (event.key === "ArrowRight" ? 1 : count - 1)) % Math.max(1, count);
    renderCards(state.view, new Set(state.view.wild.map(symbol)));
    focusCard();
    event.preventDefault();
  }
});
document.addEventListener("keydown", (event) => {
  if ($("table").hidden || event.target instanceof HTMLInputElement) return;
  if (event.key === "Enter" && !$("play-button").disabled && event.target.id !== "play-button") { play(); event.preventDefault(); }
  if (event.key === "p" && !$("pass-button").disabled) pass();
  if (event.key === "h" && !$("hint-button").disabled) hint();
});
$("signin-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.token = new FormData(event.target).get("token").trim();
  localStorage.setItem(KEY.token, state.token);
  event.target.reset();
  start();
});
$("sign-out").addEventListener("click", () => signOut());
// The browser knows before the stream does that the network is gone: drop the stream,
// say so, and follow the seat again (from the last position) once it is back.
window.addEventListener("offline", () => state.cut && state.cut.abort());
$("guest").addEventListener("click", playAsGuest);

async function offerGuests() {
  try {
    const answer = await fetch("/guest", { headers: { accept: "application/json" } });
    $("guest-line").hidden = !(answer.ok && (await answer.json()).guests);
  } catch {
    $("guest-line").hidden = true;
  }
}

async function playAsGuest() {
  say("");
  const answer = await fetch("/guest", { method: "POST", headers: { "x-ddz-guest": "1" } });
  const found = await answer.json();
  if (!answer.ok) return say(found.error);
  state.token = found.token;
  localStorage.setItem(KEY.token, state.token);
  return start();
}

function start() {
  if (!state.token) {
    offerGuests();
    return show("signin");
  }
  try {
    const claims = JSON.parse(atob(state.token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    $("who-name").textContent = `Signed in as ${claims.sub}`;
  } catch {
    return signOut("that is not a player token (ddz token player NAME prints one)");
  }
  const room = localStorage.getItem(KEY.room);
  if (room) return join(room); // a reload: the same seat and hand, without a new sign-in
  return showRooms();
}

start();

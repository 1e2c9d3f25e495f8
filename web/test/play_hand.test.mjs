// A client of the suite's TableService over gRPC-Web, written from protos/ (the client
// protoc-gen-es generates, web/gen/) with @connectrpc/connect-node: it signs in with a
// player token, joins a room, follows its seat with WatchHand and plays each of its
// turns with the table's own hint, to the hand's end. Run by tests/e2e/test_play_web.py
// against a real suite (PLAY_URL, PLAY_CA, PLAY_TOKEN, PLAY_OTHER_TOKEN: a player who
// does not sit, PLAY_ROOM, PLAY_EVIDENCE: where to write the hand's evidence file).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-node";
import { TableService } from "../gen/ddz/v1/table_pb.js";
import { HandPhase } from "../gen/ddz/v1/rules_pb.js";
import { Side } from "../gen/ddz/v1/hand_events_pb.js";

const { PLAY_URL, PLAY_CA, PLAY_TOKEN, PLAY_ROOM = "classic" } = process.env;

function client() {
  const transport = createGrpcWebTransport({
    baseUrl: PLAY_URL,
    httpVersion: "1.1",
    nodeOptions: { ca: readFileSync(PLAY_CA) },
  });
  return createClient(TableService, transport);
}

const bearer = (token) => ({ headers: { authorization: `Bearer ${token}` } });

test("rooms are listed without a token", async () => {
  const rooms = await client().listRooms({});
  assert.ok(rooms.rooms.some((room) => room.roomId === PLAY_ROOM), "the room is offered");
});

test("no token and a bad one are the table's refusals", async () => {
  const table = client();
  await assert.rejects(table.joinRoom({ roomId: PLAY_ROOM }), (error) => {
    assert.ok(error instanceof ConnectError);
    assert.equal(error.code, Code.Unauthenticated);
    assert.match(error.rawMessage, /no token/);
    return true;
  });
  await assert.rejects(
    table.joinRoom({ roomId: PLAY_ROOM }, bearer("not-a-token")),
    (error) => error.code === Code.Unauthenticated,
  );
});

test("a player plays a whole hand over gRPC-Web", { timeout: 240_000 }, async () => {
  const table = client();
  const joined = await table.joinRoom({ roomId: PLAY_ROOM }, { ...bearer(PLAY_TOKEN), timeoutMs: 60_000 });
  assert.ok(joined.handId, "seated with a hand dealt");
  const seat = joined.seat;
  const asSeat = bearer(joined.token);

  // A move for another seat is refused with the table's reason, in its details.
  const other = (seat + 1) % 3;
  await assert.rejects(table.pass({ handId: joined.handId, seat: other }, asSeat), (error) => {
    assert.equal(error.code, Code.PermissionDenied);
    return true;
  });

  let last = null;
  let moves = 0;
  const stream = table.watchHand({ handId: joined.handId, seat }, { ...asSeat, timeoutMs: 200_000 });
  for await (const update of stream) {
    const view = update.view;
    if (!view) continue;
    last = view;
    // Only this seat's cards: another seat's show up only when the rules make them public.
    assert.equal(view.seat, seat);
    assert.equal(view.cards.length, view.cardCounts[seat]);
    // The ledger follows the end (the settlement's event): the result is complete then.
    if (view.phase === HandPhase.ENDED) {
      if (view.ledger?.deltas.length) break;
      continue;
    }
    if (!view.myTurn) continue;
    const ids = { handId: view.handId, seat };
    try {
      const move = (await table.hint(ids, asSeat)).move.move;
      if (move.case === "bid") await table.bid({ ...ids, action: move.value.action, score: move.value.score }, asSeat);
      else if (move.case === "play") await table.play({ ...ids, cards: move.value.cards, declared: move.value.declared }, asSeat);
      else if (move.case === "pass") await table.pass(ids, asSeat);
      else if (move.case === "showCards") await table.showCards(ids, asSeat);
      moves += 1;
    } catch (error) {
      // The view may be one update behind the hand (the bot moved for us meanwhile).
      if (!(error instanceof ConnectError) || error.code !== Code.FailedPrecondition) throw error;
    }
  }
  assert.ok(last, "the stream sent views");
  assert.equal(last.phase, HandPhase.ENDED, "the hand was played to its end");
  assert.notEqual(last.winner, Side.UNSPECIFIED);
  assert.equal(last.ledger?.deltas.length, 3, "the hand was settled");
  assert.equal(last.ledger.deltas.reduce((a, b) => a + b, 0n) + last.ledger.system, 0n);
  assert.ok(moves > 0, "the player moved");

  // The hand's evidence file, for the player who sat in it (the recorder may still be
  // storing the hand's last events: WRONG_PHASE until then).
  let evidence = null;
  for (let tries = 0; !evidence && tries < 50; tries += 1) {
    try {
      evidence = await table.getHandEvidence({ handId: joined.handId }, bearer(PLAY_TOKEN));
    } catch (error) {
      if (error.code !== Code.FailedPrecondition && error.code !== Code.NotFound) throw error;
      await new Promise((done) => setTimeout(done, 200));
    }
  }
  assert.ok(evidence, "the evidence file came");
  assert.equal(evidence.fileName, `hand-${joined.handId}.ddz-evidence.json`);
  assert.ok(new TextDecoder().decode(evidence.file).includes(joined.handId));
  // Another player did not sit in this hand: not theirs to have.
  await assert.rejects(
    table.getHandEvidence({ handId: joined.handId }, bearer(process.env.PLAY_OTHER_TOKEN)),
    (error) => error.code === Code.PermissionDenied && /did not sit in hand/.test(error.rawMessage),
  );
  if (process.env.PLAY_EVIDENCE) writeFileSync(process.env.PLAY_EVIDENCE, evidence.file);
  assert.equal(last.finalHands.length, 3, "every seat's cards left are public at the end");
});

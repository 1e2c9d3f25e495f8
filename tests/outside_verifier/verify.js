#!/usr/bin/env node
// The reference outside check of a ddz evidence file, written from docs/AUDIT.md,
// "Verifying an evidence file yourself", alone: Node's own SHA-256 and Ed25519, and
// protobufjs reading the project's .proto files at run time. None of the project's code.
//
//   node verify.js FILE KEYRING [PROTOS_DIR]
//
// Prints one JSON line {"verdict": "verified"|"refused", "step", "reason", "hand_id"};
// exit 0 when verified, 1 when refused, 2 on bad usage.
"use strict";

const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const protobuf = require("protobufjs");

const ABOUT =
  "The evidence file of one Dou Dizhu hand: its stored events, their signatures, the " +
  "signed heads, the public keys and the transcript. Verify it with `ddz audit --bundle " +
  "FILE --keys KEYRING`, KEYRING being the operator's published keyring (`ddz keys export`).";
const FILE_FIELDS = ["about", "events", "format", "hand_id", "heads", "keys", "stream_id",
  "transcript", "version"];
const KEY_FIELDS = ["algorithm", "fingerprint", "key_id", "producer", "public_key", "use"];
const EVENT_FIELDS = ["envelope", "event_id", "hash", "prev_hash", "producer_key_id",
  "signature", "type", "type_version", "version"];
const HEAD_FIELDS = ["algorithm", "head_hash", "head_version", "key_id", "signature"];
const PRODUCERS = ["dealer", "rules", "table"];
const SIGNERS = { hand_started: ["dealer"], hand_ended: ["rules"], hand_settled: ["rules"],
  seed_revealed: ["rules"] };
const ANY_HAND_EVENT = ["dealer", "rules"];
// The DER prefix of an Ed25519 SubjectPublicKeyInfo: Node takes raw keys this way.
const ED25519_SPKI = Buffer.from("302a300506032b6570032100", "hex");

class Refused extends Error {
  constructor(step, reason) {
    super(reason);
    this.step = step;
  }
}

function refuse(step, reason) {
  throw new Refused(step, reason);
}

function sameFields(object, fields) {
  return object !== null && typeof object === "object" && !Array.isArray(object) &&
    JSON.stringify(Object.keys(object).sort()) === JSON.stringify(fields);
}

function sorted(value) {
  if (Array.isArray(value)) return value.map(sorted);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const key of Object.keys(value).sort()) out[key] = sorted(value[key]);
    return out;
  }
  return value;
}

// Step 1's form: keys sorted, one space of indent, every character outside printable
// ASCII as a lower-case \uXXXX (JSON.stringify already writes the short escapes and
// the control characters so), a final newline.
function canonical(document) {
  const text = JSON.stringify(sorted(document), null, 1).replace(
    /[^\x20-\x7e\n]/g,
    (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"),
  );
  return text + "\n";
}

// Step 1's comparison. The transcript is the last top-level field but one (keys sorted,
// "version" after it; only top-level keys start a line with one space and a quote); in
// it numbers may be spelt as Python spells floats ("0.0"), which JSON.parse keeps only as
// values: there, and only there, a number compares by value. Everything outside the
// transcript compares byte for byte.
function sameText(expected, actual) {
  const [start, end] = ['\n "transcript": ', '\n "version": '];
  const cut = (text) => [text.indexOf(start), text.lastIndexOf(end)];
  const [[a, b], [c, d]] = [cut(expected), cut(actual)];
  if (a < 0 || b < a || c < 0 || d < c || expected.slice(0, a) !== actual.slice(0, c) ||
      expected.slice(b) !== actual.slice(d)) {
    return false;
  }
  const token = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
  const byValue = (text) =>
    text.replace(token, (t) => (t.startsWith('"') ? t : String(Number(t))));
  return byValue(expected.slice(a, b)) === byValue(actual.slice(c, d));
}

function sha256(...parts) {
  const hash = crypto.createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest();
}

function canonicalBase64(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? bytes : null;
}

function lowerHex(text, bytes) {
  return typeof text === "string" && text.length === 2 * bytes && /^[0-9a-f]*$/.test(text);
}

function ed25519Verify(raw, message, signature) {
  const key = crypto.createPublicKey({
    key: Buffer.concat([ED25519_SPKI, raw]), format: "der", type: "spki",
  });
  return crypto.verify(null, message, key, signature);
}

// Step 2 (and 3: a published keyring's entries have the same form).
function readKeys(entries, where) {
  if (!Array.isArray(entries)) refuse(where, "the keys are not a list");
  const keys = new Map();
  for (const entry of entries) {
    if (!sameFields(entry, KEY_FIELDS)) refuse(where, "a key entry has other fields than the six");
    if (entry.algorithm !== "ed25519") refuse(where, `key ${entry.key_id} is not ed25519`);
    const raw = canonicalBase64(entry.public_key);
    if (raw === null || raw.length !== 32) refuse(where, `key ${entry.key_id}: not 32 raw bytes`);
    const digest = sha256(raw).toString("hex");
    if (entry.fingerprint !== "SHA256:" + digest) {
      refuse(where, `key ${entry.key_id}: its fingerprint is not its key's`);
    }
    let expected;
    if (entry.use === "head") {
      if (entry.producer !== null) refuse(where, `head key ${entry.key_id} names a producer`);
      expected = "ed25519-" + digest.slice(0, 16);
    } else if (entry.use === "event") {
      if (!PRODUCERS.includes(entry.producer)) refuse(where, `key ${entry.key_id}: no producer`);
      expected = entry.producer + "-ed25519-" + digest.slice(0, 16);
    } else {
      refuse(where, `key ${entry.key_id}: use is neither head nor event`);
    }
    if (entry.key_id !== expected) refuse(where, `key id ${entry.key_id} does not name its key`);
    if (keys.has(entry.key_id)) refuse(where, `key id ${entry.key_id} appears twice`);
    keys.set(entry.key_id, { entry, raw });
  }
  return keys;
}

function verify(data, keyringText, root) {
  const EventEnvelope = root.lookupType("ddz.v1.EventEnvelope");
  const HandStarted = root.lookupType("ddz.v1.HandStarted");
  const SeedRevealed = root.lookupType("ddz.v1.SeedRevealed");

  // 1. The file.
  let document;
  try {
    document = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(data));
  } catch (error) {
    refuse("file", `not UTF-8 JSON (${error.message})`);
  }
  if (!sameFields(document, FILE_FIELDS)) refuse("file", "not the fields of ddz-evidence 1");
  if (!sameText(canonical(document), data.toString("latin1"))) {
    refuse("file", "not in canonical form");
  }
  if (document.format !== "ddz-evidence" || document.version !== 1) {
    refuse("file", "not ddz-evidence version 1");
  }
  if (document.about !== ABOUT) refuse("file", "the about text is not the one required");
  const streamId = document.stream_id;
  if (typeof document.hand_id !== "string" || streamId !== "hand-" + document.hand_id) {
    refuse("file", "the hand id is not the stream's");
  }
  if (document.transcript === null || typeof document.transcript !== "object" ||
      Array.isArray(document.transcript)) {
    refuse("file", "the transcript is not an object");
  }

  // 2. The keys.
  const keys = readKeys(document.keys, "keys");

  // 3. The published keyring: every key of the file in it, entry for entry.
  let keyring;
  try {
    keyring = JSON.parse(keyringText);
  } catch (error) {
    refuse("published_keys", `the keyring is not JSON (${error.message})`);
  }
  if (keyring === null || typeof keyring !== "object" ||
      keyring.format !== "ddz-public-keyring" || keyring.version !== 1) {
    refuse("published_keys", "the keyring is not ddz-public-keyring version 1");
  }
  const published = readKeys(keyring.keys, "published_keys");
  for (const [keyId, { entry }] of keys) {
    const held = published.get(keyId);
    if (held === undefined || JSON.stringify(sorted(held.entry)) !== JSON.stringify(sorted(entry))) {
      refuse("published_keys", `key ${keyId} is not in the published keyring`);
    }
  }

  // 4. The events and their chain.
  const events = document.events;
  if (!Array.isArray(events) || events.length === 0) refuse("events", "the file holds no events");
  const envelopes = [];
  let previous = "0".repeat(64);
  events.forEach((entry, index) => {
    const where = `event ${index + 1}`;
    if (!sameFields(entry, EVENT_FIELDS)) refuse("events", `${where}: not the nine fields`);
    if (entry.version !== index + 1) {
      refuse("hash_chain", `${where}: its version is ${entry.version} (removed or moved)`);
    }
    if (!Number.isInteger(entry.type_version)) refuse("events", `${where}: type_version`);
    for (const field of EVENT_FIELDS) {
      if (field !== "version" && field !== "type_version" && typeof entry[field] !== "string") {
        refuse("events", `${where}: ${field} is not a string`);
      }
    }
    const bytes = canonicalBase64(entry.envelope);
    if (bytes === null) refuse("events", `${where}: its envelope is not canonical base64`);
    if (entry.prev_hash !== previous) refuse("hash_chain", `${where}: prev_hash breaks the chain`);
    const hash = sha256(Buffer.from(entry.prev_hash, "hex"), bytes).toString("hex");
    if (!lowerHex(entry.hash, 32) || entry.hash !== hash) {
      refuse("hash_chain", `${where}: its hash is not sha256(prev_hash, envelope)`);
    }
    previous = entry.hash;
    envelopes.push(bytes);
  });

  // 5. Each envelope's signature.
  const eventIds = new Set();
  const used = new Set();
  const types = [];
  const payloads = [];
  envelopes.forEach((bytes, index) => {
    const entry = events[index];
    const where = `event ${index + 1}`;
    let envelope;
    try {
      envelope = EventEnvelope.decode(bytes);
    } catch (error) {
      refuse("producer_signature", `${where}: not an EventEnvelope (${error.message})`);
    }
    const version = Number(String(envelope.streamVersion));
    if (envelope.streamId !== streamId || version !== entry.version ||
        envelope.eventId !== entry.event_id || envelope.type !== entry.type ||
        envelope.typeVersion !== entry.type_version) {
      refuse("events", `${where}: the entry's fields are not its envelope's`);
    }
    if (eventIds.has(envelope.eventId)) refuse("events", `${where}: its event id appears twice`);
    eventIds.add(envelope.eventId);
    if (envelope.envelopeVersion !== 1) refuse("producer_signature", `${where}: not signed`);
    if (envelope.producerKeyId !== entry.producer_key_id) {
      refuse("events", `${where}: the listed key id is not the envelope's`);
    }
    const tail = bytes.subarray(bytes.length - 66);
    if (bytes.length < 66 || tail[0] !== 0x7a || tail[1] !== 0x40) {
      refuse("producer_signature", `${where}: the signature is not the envelope's last field`);
    }
    const signature = tail.subarray(2);
    if (signature.toString("hex") !== entry.signature) {
      refuse("events", `${where}: the listed signature is not the envelope's`);
    }
    const key = keys.get(envelope.producerKeyId);
    if (key === undefined || key.entry.use !== "event") {
      refuse("producer_signature", `${where}: signed under a key the file does not carry`);
    }
    if (!ed25519Verify(key.raw, bytes.subarray(0, bytes.length - 66), signature)) {
      refuse("producer_signature", `${where}: the signature does not verify`);
    }
    const allowed = SIGNERS[entry.type] || ANY_HAND_EVENT;
    if (!allowed.includes(key.entry.producer)) {
      refuse("producer_signature", `${where}: ${key.entry.producer} may not sign ${entry.type}`);
    }
    used.add(envelope.producerKeyId);
    types.push(entry.type);
    payloads.push(envelope.payload);
  });

  // 6. The signed head.
  const heads = document.heads;
  if (!Array.isArray(heads) || heads.length === 0) refuse("signature", "no signed head");
  let top = 0;
  heads.forEach((head, index) => {
    const where = `head ${index + 1}`;
    if (!sameFields(head, HEAD_FIELDS)) refuse("keys", `${where}: not the five fields`);
    const key = keys.get(head.key_id);
    if (head.algorithm !== "ed25519" || key === undefined || key.entry.use !== "head") {
      refuse("keys", `${where}: not under a head key of the file`);
    }
    if (!Number.isInteger(head.head_version) || head.head_version < 1 ||
        head.head_version > events.length) {
      refuse("signature", `${where}: names no event of the file`);
    }
    if (events[head.head_version - 1].hash !== head.head_hash) {
      refuse("signature", `${where}: the hash it signs is not event ${head.head_version}'s`);
    }
    if (!lowerHex(head.signature, 64)) refuse("keys", `${where}: a malformed signature`);
    const message = Buffer.from(
      `ddz.v1/head\n${streamId}\n${head.head_version}\n${head.head_hash}`, "utf8",
    );
    if (!ed25519Verify(key.raw, message, Buffer.from(head.signature, "hex"))) {
      refuse("signature", `${where}: the signature does not verify`);
    }
    used.add(head.key_id);
    top = Math.max(top, head.head_version);
  });
  let last = types.length - 1;
  while (last >= 0 && types[last] === "command_rejected") last -= 1;
  if (top < last + 1) refuse("signature", `events after the signed head #${top}`);
  if (types[last] !== "seed_revealed") refuse("signature", "the hand did not end");

  // 7. No spare key.
  for (const keyId of keys.keys()) {
    if (!used.has(keyId)) refuse("events", `key ${keyId} signs nothing in the file`);
  }

  // 8. The commitment.
  const started = HandStarted.decode(payloads[0]);
  const seed = SeedRevealed.decode(payloads[last]);
  if (types[0] !== "hand_started" ||
      sha256(Buffer.from(seed.seed, "hex")).toString("hex") !== started.commitment) {
    refuse("commitment", "the revealed seed is not the one committed to");
  }

  // 9. The transcript is display text: checked above only to be an object.
  return document.hand_id;
}

function main(argv) {
  if (argv.length < 2) {
    process.stderr.write("usage: node verify.js FILE KEYRING [PROTOS_DIR]\n");
    return 2;
  }
  const protos = argv[2] || path.join(__dirname, "..", "..", "protos");
  const root = new protobuf.Root();
  root.resolvePath = (origin, target) => {
    const local = path.join(protos, target);
    return fs.existsSync(local) ? local : protobuf.util.path.resolve(origin, target);
  };
  root.loadSync(["ddz/v1/envelope.proto", "ddz/v1/hand_events.proto"], { keepCase: false });
  try {
    const handId = verify(fs.readFileSync(argv[0]), fs.readFileSync(argv[1], "utf8"), root);
    process.stdout.write(JSON.stringify({ verdict: "verified", hand_id: handId }) + "\n");
    return 0;
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    process.stdout.write(
      JSON.stringify({ verdict: "refused", step: error.step, reason: error.message }) + "\n",
    );
    return 1;
  }
}

process.exitCode = main(process.argv.slice(2));

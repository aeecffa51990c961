// verify.mjs: an independent verifier of flagadmin's log leaves, format
// flagadmin-leaf-v1, written from its definition with npm's canonicalize
// (RFC 8785) and node:crypto, sharing no code with flagadmin.
//
// Input, on stdin or in the file named by the first argument: one JSON
// object a line, {"salt": hex, "event": the event as the API shows it,
// "leaf": hex}. For each line it recomputes
//
//   content = RFC 8785 canonical JSON of the event without "id"
//   commit  = SHA-256(salt || content)
//   fields  = RFC 8785 canonical JSON of {createdAt, id, project, type}
//   input   = "flagadmin-leaf-v1\n" || fields || "\n" || commit
//   leaf    = SHA-256(0x00 || input)
//
// and prints each line whose leaf differs (or cannot be computed: an event
// a strict RFC 8785 implementation refuses). Exit status 1 if any, else 0.
import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

const FORMAT = 'flagadmin-leaf-v1';
const SALT_SIZE = 16;

function sha256(...parts) {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

// leafOf returns the leaf hash (hex) of event with salt (a Buffer).
function leafOf(salt, event) {
  if (salt.length !== SALT_SIZE) {
    throw new Error(`salt of ${salt.length} bytes, want ${SALT_SIZE}`);
  }
  if (!Number.isInteger(event.id)) {
    throw new Error(`id ${event.id} is not an integer`);
  }
  const { id, ...withoutID } = event;
  const content = Buffer.from(canonicalize(withoutID), 'utf8');
  const commit = sha256(salt, content);
  const fields = canonicalize({ createdAt: event.createdAt, id, project: event.project ?? null, type: event.type });
  const input = Buffer.concat([Buffer.from(`${FORMAT}\n${fields}\n`, 'utf8'), commit]);
  return sha256(Buffer.from([0]), input).toString('hex');
}

const input = process.argv[2] ? createReadStream(process.argv[2]) : process.stdin;
let lines = 0;
let mismatches = 0;
for await (const text of createInterface({ input, crlfDelay: Infinity })) {
  if (text.trim() === '') continue;
  lines++;
  let what = `line ${lines}`;
  try {
    const { salt, event, leaf } = JSON.parse(text);
    what += ` (event ${event.id})`;
    const got = leafOf(Buffer.from(salt, 'hex'), event);
    if (got !== String(leaf).toLowerCase()) {
      mismatches++;
      console.log(`MISMATCH ${what}: leaf ${got}, given ${leaf}`);
    }
  } catch (err) {
    mismatches++;
    console.log(`MISMATCH ${what}: ${err.message}`);
  }
}
console.log(`${lines} leaves, ${mismatches} mismatches`);
process.exitCode = mismatches > 0 ? 1 : 0;

// Secrets of real shapes, random on every call (so no test passes on one lucky constant), and look-alikes that are not secrets.
import { createHash, generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { Buffer } from "node:buffer";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/** `n` random characters of `alphabet`. */
export const randomOf = (n: number, alphabet = ALNUM) => Array.from(randomBytes(n), (b) => alphabet[b % alphabet.length]).join("");
const UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const BASE64URL = `${ALNUM}_-`;
const digits = (n: number) => randomOf(n, "0123456789");

/** An OpenSSH private key as ssh-keygen writes it (openssh-key-v1, unencrypted ed25519), its key pair made now. */
export function opensshKey(): string {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const pub = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
  const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(-32);
  const u32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
  const str = (b: Buffer | string) => Buffer.concat([u32(Buffer.byteLength(b)), Buffer.from(b)]);
  const pubBlob = Buffer.concat([str("ssh-ed25519"), str(pub)]);
  const check = randomBytes(4);
  let secret = Buffer.concat([check, check, pubBlob, str(Buffer.concat([seed, pub])), str("dev@laptop")]);
  for (let pad = 1; secret.length % 8 !== 0; pad++) secret = Buffer.concat([secret, Buffer.from([pad])]);
  const body = Buffer.concat([Buffer.from("openssh-key-v1\0"), str("none"), str("none"), str(""), u32(1), str(pubBlob), str(secret)]).toString("base64");
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${body.match(/.{1,70}/g)!.join("\n")}\n-----END OPENSSH PRIVATE KEY-----\n`;
}

/** One secret of each kind the tests name: its kind as the scanner names it, and a line a user would paste it in. */
export function secretSamples(): { kind: string; secret: string; line: string }[] {
  const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
  const aws = `AKIA${randomOf(16, UPPER_DIGITS)}`;
  const awsSecret = randomOf(40, `${ALNUM}/+`);
  const samples: [string, string, (s: string) => string][] = [
    ["aws-access-key-id", aws, (s) => `AWS_ACCESS_KEY_ID=${s}`],
    ["aws-secret-access-key", awsSecret, (s) => `export AWS_SECRET_ACCESS_KEY=${s}`],
    ["github-token", `ghp_${randomOf(36)}`, (s) => `git clone https://github.com/acme/app (token ${s})`],
    ["github-token", `github_pat_${randomOf(22)}_${randomOf(59)}`, (s) => `GH_TOKEN=${s}`],
    ["slack-token", `xoxb-${digits(12)}-${digits(13)}-${randomOf(24)}`, (s) => `the bot token is ${s}`],
    ["private-key", opensshKey(), (s) => `~/.ssh/id_ed25519:\n${s}`],
    ["private-key", rsa, (s) => s],
    ["anthropic-api-key", `sk-ant-api03-${randomOf(93, BASE64URL)}AA`, (s) => `ANTHROPIC_API_KEY=${s}`],
    ["anthropic-admin-key", `sk-ant-admin01-${randomOf(93, BASE64URL)}AA`, (s) => `admin key: ${s}`],
    ["anthropic-oauth-token", `sk-ant-oat01-${randomOf(95, BASE64URL)}AA`, (s) => `"accessToken":"${s}"`],
    ["anthropic-refresh-token", `sk-ant-ort01-${randomOf(95, BASE64URL)}AA`, (s) => `"refreshToken": "${s}",`],
    ["npm-access-token", `npm_${randomOf(36)}`, (s) => `//registry.npmjs.org/:_authToken=${s}`],
    ["stripe-secret-key-live", `sk_live_${randomOf(24)}`, (s) => `STRIPE_KEY=${s}`],
    ["postgre-sql-connection", `postgres://app:${randomOf(16)}@db.internal:5432/prod`, (s) => `DATABASE_URL=${s}`],
  ];
  return samples.map(([kind, secret, line]) => ({ kind, secret, line: line(secret) }));
}

/** Strings that look like secrets to a careless rule and must stay as they are. */
export function nearMisses(): { what: string; text: string }[] {
  const png = Buffer.concat([Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"), randomBytes(200_000)]).toString("base64");
  return [
    { what: "a UUID", text: `session ${randomUUID()} resumed` },
    { what: "a git SHA", text: `commit ${randomBytes(20).toString("hex")} (HEAD -> main)` },
    { what: "base64 of an image", text: png },
    { what: "sk- words in prose", text: "Use sk-learn for that; keys that start with sk-ant- are Anthropic's, and sk-ant-api03- alone is only a prefix." },
    { what: "a long hex hash", text: `sha512 ${createHash("sha512").update(randomBytes(16)).digest("hex")}` },
    { what: "a sha256 reference", text: createHash("sha256").update(randomBytes(16)).digest("hex") },
  ];
}

/** Every file under `dir` with its bytes' hash, mode and mtime: what a reader must leave as it found. */
export function snapshot(dir: string, out = new Map<string, string>()): Map<string, string> {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const info = lstatSync(path);
    if (info.isDirectory()) snapshot(path, out);
    out.set(path, `${info.mode} ${info.mtimeMs} ${info.isFile() ? createHash("sha256").update(readFileSync(path)).digest("hex") : ""}`);
  }
  return out;
}

/** The pieces of `secrets` (a private key line by line) that `text` holds, raw or JSON-escaped. */
export const leaks = (text: string, secrets: string[]) =>
  secrets.flatMap((s) => s.split("\n")).filter((p) => p.length >= 12 && (text.includes(p) || text.includes(JSON.stringify(p).slice(1, -1))));

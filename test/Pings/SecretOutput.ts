import { FastCheck } from "effect"

/**
 * Job output holding secrets in the forms docs/redaction.md promises, after words of any length
 * (glued to the secret's keyword or not), for the property "no part of a secret is ever stored".
 *
 * Secret values are drawn from {@link SECRET_ALPHABET} and nothing else in the output is: the
 * words, keys, schemes and the marker hold none of these characters, so a run of
 * {@link FRAGMENT} of them in the stored output can only be a piece of a secret.
 */

/** Capitals and digits that spell no keyword, no scheme, no token prefix and not the marker. */
export const SECRET_ALPHABET = "QXZJKVF789"
/** Hexadecimal characters of the alphabet, for tokens whose format is hex. */
const SECRET_HEX = "F789"
const SECRET_LOWER_HEX = "789"

/** The length of a piece of a secret that must never be stored. */
export const FRAGMENT = 6

/** Pieces of `secret` of {@link FRAGMENT} characters. */
export const fragmentsOf = (secret: string): Array<string> => {
  const pieces: Array<string> = []
  for (let i = 0; i + FRAGMENT <= secret.length; i++) pieces.push(secret.slice(i, i + FRAGMENT))
  return pieces
}

/** The first piece of a secret found in `stored`, or undefined. */
export const leakedFragment = (stored: string, secrets: ReadonlyArray<string>): string | undefined => {
  for (const secret of secrets) {
    for (const piece of fragmentsOf(secret)) if (stored.includes(piece)) return piece
  }
  return undefined
}

const from = (alphabet: string, minLength: number, maxLength: number) =>
  FastCheck.string({ unit: FastCheck.constantFrom(...alphabet), minLength, maxLength })

/** Characters of words: letters (but the secret's capitals), digits 0–6, `_`, and some others. */
const WORD_CHARACTERS = "abcdefghijklmnopqrstuvwxyzABCDEGHILMNOPRSTUWY0123456_"
const OTHER_CHARACTERS = ".,!?()[]{}/#*'\"\\<>é€😀\u0000"

/** A word to glue in front of a keyword: empty, short, or a long run (thousands of characters). */
const glue = FastCheck.oneof(
  { arbitrary: FastCheck.constant(""), weight: 2 },
  { arbitrary: from(WORD_CHARACTERS, 1, 12), weight: 3 },
  {
    arbitrary: FastCheck.tuple(from(WORD_CHARACTERS, 0, 6), FastCheck.constantFrom(..."yY0_a"), FastCheck.integer({ min: 1, max: 5000 }))
      .map(([head, unit, n]) => head + unit.repeat(n)),
    weight: 2
  }
)

/** A word of the text around the secrets. */
const word = FastCheck.oneof(
  { arbitrary: from(WORD_CHARACTERS, 1, 12), weight: 6 },
  { arbitrary: from(WORD_CHARACTERS + OTHER_CHARACTERS, 1, 12), weight: 3 },
  { arbitrary: FastCheck.constantFrom("user: bob", "count=3", "url=https://example.com/a?b=c", "exit 1", "PASS: TestLogin", "token bucket refilled"), weight: 1 },
  { arbitrary: FastCheck.integer({ min: 1, max: 4000 }).map((n) => "x".repeat(n)), weight: 1 }
)

const blank = FastCheck.constantFrom(" ", "\n", "\t", ", ", "; ", "\r\n")

/** Words with blanks between them, possibly none. */
const words = FastCheck.array(FastCheck.tuple(word, blank), { maxLength: 6 }).map((pairs) => pairs.map(([w, b]) => w + b).join(""))

const secretValue = from(SECRET_ALPHABET, 16, 40)

interface Placed {
  /** The text of the secret, glued to `glue` where the form allows it. */
  readonly text: string
  /** The secret values in it. */
  readonly secrets: ReadonlyArray<string>
  /** Whether words may follow without a blank. */
  readonly glueAfter: boolean
}

/** A key form: the glue goes right before the keyword. */
const keyed = (render: (glue: string, value: string) => string) =>
  FastCheck.tuple(glue, secretValue).map(([g, v]): Placed => ({ text: render(g, v), secrets: [v], glueAfter: true }))

/** A bare token: it must start a word (docs/redaction.md), so no glue before it, a blank after. */
const bare = (prefix: string, body: FastCheck.Arbitrary<string>, after = "") =>
  body.map((v): Placed => ({ text: ` ${prefix}${v}${after}`, secrets: [v], glueAfter: false }))

const secretForms: FastCheck.Arbitrary<Placed> = FastCheck.oneof(
  keyed((g, v) => `${g}password=${v}`),
  keyed((g, v) => `${g}DB_PASSWORD: ${v}`),
  keyed((g, v) => `export ${g}DB_PASSWORD='${v}'`),
  keyed((g, v) => `{"${g}api_key": "${v}", "user": "bob"}`),
  keyed((g, v) => `${g}"api_key":"${v}"`),
  keyed((g, v) => `${g}x-api-key: ${v}`),
  keyed((g, v) => `--${g}password ${v} --verbose`),
  keyed((g, v) => `${g}aws_secret_access_key = ${v}`),
  keyed((g, v) => `Server=db;${g}AccountKey=${v};EndpointSuffix=core`),
  // An element name starts with a letter or `_`.
  keyed((g, v) => `<${/^[\d]/.test(g) ? `x${g}` : g}password>${v}</${/^[\d]/.test(g) ? `x${g}` : g}password>`),
  keyed((g, v) => `${g}token: Bearer ${v}`),
  keyed((g, v) => `${g}Authorization: Bearer ${v}`),
  keyed((g, v) => `curl -H '${g}Authorization: Basic ${v}' https://example.com`),
  keyed((g, v) => `${g}authorization: Digest username="a", response="${v}"`),
  keyed((g, v) => `${g}postgres://app:${v}@db:5432/prod`),
  keyed((g, v) => `${g}redis://:${v}@cache:6379`),
  FastCheck.tuple(glue, FastCheck.array(from(SECRET_ALPHABET, 16, 40), { minLength: 1, maxLength: 4 })).map(([g, lines]): Placed => ({
    text: `${g}-----BEGIN RSA PRIVATE KEY-----\n${lines.join("\n")}\n-----END RSA PRIVATE KEY-----`,
    secrets: lines,
    glueAfter: true
  })),
  bare("ghp_", from(SECRET_ALPHABET, 36, 40)),
  bare("github_pat_", from(SECRET_ALPHABET, 30, 40)),
  bare("AKIA", from(SECRET_ALPHABET, 16, 16), " "),
  bare("xoxb-", from(SECRET_ALPHABET, 16, 40)),
  bare("jmt_", from(SECRET_ALPHABET, 20, 40)),
  bare("glpat-", from(SECRET_ALPHABET, 20, 40)),
  bare("sk_live_", from(SECRET_ALPHABET, 16, 40)),
  bare("npm_", from(SECRET_ALPHABET, 36, 40)),
  bare("AIza", from(SECRET_ALPHABET, 35, 35), " "),
  bare("sk-proj-", from(SECRET_ALPHABET, 20, 40)),
  bare("hf_", from(SECRET_ALPHABET, 30, 40)),
  bare("shpat_", from(SECRET_HEX, 32, 32)),
  bare("dop_v1_", from(SECRET_LOWER_HEX, 64, 64))
)

export interface SecretOutput {
  readonly output: string
  readonly secrets: ReadonlyArray<string>
}

/**
 * Words, then one to three secrets each after more words, then words. What follows a secret may
 * be glued to it (`password=<secret>zzz`: the value runs on), except another secret: two
 * assignments without a blank between them are one value (`password=<a>DB_PASSWORD:` and then
 * `<b>`), which no rule can take apart.
 */
export const secretOutput: FastCheck.Arbitrary<SecretOutput> = FastCheck.tuple(
  FastCheck.array(FastCheck.tuple(words, secretForms, FastCheck.boolean()), { minLength: 1, maxLength: 3 }),
  words
).map(([items, suffix]) => {
  let output = ""
  let blankBeforeSecret = false
  const secrets: Array<string> = []
  for (const [before, placed, glued] of items) {
    output += (blankBeforeSecret && before === "" ? " " : "") + before + placed.text
    blankBeforeSecret = placed.glueAfter && glued
    if (!blankBeforeSecret) output += " "
    secrets.push(...placed.secrets)
  }
  return { output: output + suffix, secrets }
})
